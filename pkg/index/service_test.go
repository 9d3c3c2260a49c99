package index

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCutQuery(t *testing.T) {
	short := "where did we go in May?"
	if got := CutQuery(short); got != short {
		t.Errorf("a short query became %q", got)
	}
	words := strings.Repeat("lisbon ", MaxQueryBytes) // 7 bytes a word
	if got := CutQuery(words); len(got) != MaxQueryBytes/7*7-1 || !strings.HasSuffix(got, "lisbon") {
		t.Errorf("cut to %d bytes ending %q, want the last whole word before %d", len(got), got[len(got)-8:], MaxQueryBytes)
	}
	one := strings.Repeat("é", MaxQueryBytes) // one word of two-byte letters
	if got := CutQuery(" " + one); len(got) != MaxQueryBytes-1 || !utf8.ValidString(got) {
		t.Errorf("one long word: cut to %d bytes (valid UTF-8: %v), want %d whole letters", len(got), utf8.ValidString(got), (MaxQueryBytes-1)/2)
	}
}

// Whatever the text, the cut is a prefix of at most MaxQueryBytes, whole
// characters, and ends before a space when it ends before the limit.
func FuzzCutQuery(f *testing.F) {
	f.Add("the zeppelin lands at dusk ")
	f.Add("日本語 のテキスト")
	f.Add("a\u3000b\tc\nd")
	f.Add("ééé")
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return
		}
		q := strings.Repeat(s, MaxQueryBytes/len(s)+2)
		got := CutQuery(q)
		if len(got) > MaxQueryBytes || !strings.HasPrefix(q, got) {
			t.Fatalf("cut to %d bytes, not a prefix of at most %d", len(got), MaxQueryBytes)
		}
		if utf8.ValidString(q) && !utf8.ValidString(got) {
			t.Fatalf("cut inside a character: %q", got[max(0, len(got)-4):])
		}
		if r, _ := utf8.DecodeRuneInString(q[len(got):]); utf8.ValidString(q) && len(got) < MaxQueryBytes-utf8.UTFMax && !unicode.IsSpace(r) {
			t.Fatalf("cut at %d, before %q: not at a word's end", len(got), r)
		}
	})
}
