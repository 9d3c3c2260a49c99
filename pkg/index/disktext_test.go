package index

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPackedTextsComeBackAsWritten(t *testing.T) {
	long := strings.Repeat("We talked about the garden and the roses by the fence. ", 20)
	for _, text := range []string{"", "hi", strings.Repeat("a", 63), strings.Repeat("a", 64), long,
		"naïve café 東京 🌸 " + long, "\x00nul\x00" + long, string([]byte{0xff, 0xfe}) + long, // bytes that are not UTF-8
		randomBytes(2000)} {
		packed := packText(text)
		var got string
		if err := (storedText{&got}).Scan(packed); err != nil {
			t.Fatalf("%.20q: %v", text, err)
		}
		if got != text {
			t.Fatalf("%.20q came back as %.20q", text, got)
		}
	}
	if b, ok := packText(long).([]byte); !ok || len(b) > len(long)/4 {
		t.Errorf("a repetitive text of %d bytes is kept in %v; want compressed to under a quarter", len(long), packText(long))
	}
	if _, ok := packText(randomBytes(2000)).(string); !ok {
		t.Error("random bytes, which zstd cannot shrink, are kept compressed")
	}
}

// randomBytes is n bytes that no compression shrinks.
func randomBytes(n int) string {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x >> 24)
	}
	return string(b)
}

func TestADamagedTextIsAnError(t *testing.T) {
	var got string
	for _, raw := range [][]byte{{0xff, 0xff, 0xff}, {0x07}, {}} {
		if err := (storedText{&got}).Scan(raw); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("%x: err = %v, want the text called damaged", raw, err)
		}
	}
}

func FuzzStoredText(f *testing.F) {
	f.Add([]byte{0xff})
	f.Add(packText(strings.Repeat("the roses by the fence ", 10)).([]byte))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got string
		if err := (storedText{&got}).Scan(raw); err == nil && len(got) > maxStoredText {
			t.Fatalf("%d bytes read", len(got))
		}
	})
}

func TestAFileKeepsLongTextsCompressedAndSearchesThem(t *testing.T) {
	ctx := t.Context()
	store := newDiskStore(filepath.Join(t.TempDir(), "index.db"), quiet)
	if err := store.Open(ctx, Schema{Fingerprint: "test", Terms: true}); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	o := Owner{"app", "u"}
	long := "Roses by the fence: " + strings.Repeat("we talked about the garden for an hour, ", 30)
	short := "roses are red"
	var docs []StoredDoc
	for i, text := range []string{long, short} {
		docs = append(docs, StoredDoc{Document: Document{SessionID: "s", EventID: string(rune('a' + i)), Seq: int64(i + 1), Text: text},
			Terms: (Tokenizer{}).Tokens(text)})
	}
	if err := store.Write(ctx, o, docs); err != nil {
		t.Fatal(err)
	}
	if err := store.db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	rows, err := store.db.write.QueryContext(ctx, `SELECT event, typeof(text), length(CAST(text AS BLOB)) FROM docs`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var event, kind string
		var n int
		if err := rows.Scan(&event, &kind, &n); err != nil {
			t.Fatal(err)
		}
		kinds[event] = kind
		if event == "a" && n > len(long)/3 {
			t.Errorf("the long text takes %d bytes of its %d", n, len(long))
		}
	}
	rows.Close()
	if kinds["a"] != "blob" || kinds["b"] != "text" {
		t.Errorf("kept as %v; want the long text compressed (a blob), the short one as text", kinds)
	}
	rs, err := store.Search(ctx, o, StoreQuery{Terms: (Tokenizer{}).Tokens("roses"), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("found %d documents, want 2", len(rs))
	}
	for _, r := range rs {
		if want := map[string]string{"a": long, "b": short}[r.EventID]; r.Content != want || !utf8.ValidString(r.Content) {
			t.Errorf("%s's content is %.40q, want %.40q", r.EventID, r.Content, want)
		}
	}
	// Written again unchanged, it is the same document: no new one.
	if err := store.Write(ctx, o, docs[:1]); err != nil {
		t.Fatal(err)
	}
	if err := store.db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := store.db.write.QueryRowContext(ctx, `SELECT count(*) FROM docs`).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d documents after writing one again (%v), want 2", n, err)
	}
}

// A LongMemEval turn's size of English (its turns average 993 bytes).
var turnText = strings.Repeat("I've been thinking about planting tomatoes and basil in the raised bed this spring. ", 12)

func BenchmarkPackText(b *testing.B) {
	b.SetBytes(int64(len(turnText)))
	for b.Loop() {
		packText(turnText)
	}
}

func BenchmarkStoredText(b *testing.B) {
	packed := packText(turnText)
	b.SetBytes(int64(len(turnText)))
	var s string
	for b.Loop() {
		if err := (storedText{&s}).Scan(packed); err != nil {
			b.Fatal(err)
		}
	}
}
