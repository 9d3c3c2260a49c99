package index

import (
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/session"
)

// A search's candidates are read without their long texts, which only the
// results kept are given: a brief question's text is read (creditReplies
// needs it), a long turn's is left in the file until texts gives it, by
// number, by event when the number names another document (a rebuild
// numbered them anew), and not at all when its document is gone.
func TestLongTextsComeOnlyForTheResultsKept(t *testing.T) {
	ctx := t.Context()
	store := openKeywordFile(t)
	o := Owner{"app", "u"}
	r := rand.New(rand.NewPCG(5, 6))
	long := func() string { // that compresses no more than English does
		words := []string{"Roses"}
		for range 200 {
			words = append(words, strconv.FormatUint(r.Uint64(), 36)[:2+r.IntN(6)])
		}
		return strings.Join(words, " ")
	}
	texts := map[string]string{"q": "Which roses did you plant?", "a": long(), "b": long()}
	var docs []StoredDoc
	for i, event := range []string{"q", "a", "b"} {
		docs = append(docs, StoredDoc{Document: Document{SessionID: "s", EventID: event, Seq: int64(i + 1), Text: texts[event]},
			Terms: (Tokenizer{}).Tokens(texts[event])})
	}
	if err := store.Write(ctx, o, docs); err != nil {
		t.Fatal(err)
	}
	search := func() []SearchResult {
		t.Helper()
		rs, err := store.Search(ctx, o, StoreQuery{Terms: (Tokenizer{}).Tokens("roses"), Limit: 10, textsLater: true})
		if err != nil || len(rs) != 3 {
			t.Fatalf("found %d results (%v), want 3", len(rs), err)
		}
		return rs
	}
	// Unflushed, every text is in memory and comes with its result.
	for _, r := range search() {
		if r.textLater || r.Content != texts[r.EventID] {
			t.Errorf("unflushed, %s came with %.30q (later: %v), want its text", r.EventID, r.Content, r.textLater)
		}
	}
	if err := store.db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	rs := search()
	for _, r := range rs {
		if brief := r.EventID == "q"; r.textLater == brief || brief && r.Content != texts["q"] || !brief && r.Content != "" {
			t.Errorf("%s came with %.30q (later: %v); want the brief question's text only", r.EventID, r.Content, r.textLater)
		}
	}
	for i := range rs {
		if rs[i].EventID == "b" {
			rs[i].doc = 1 << 20 // no document of the owner's: read by event
		}
	}
	given, err := store.texts(ctx, o, rs)
	if err != nil || len(given) != 3 {
		t.Fatalf("gave %d results (%v), want 3", len(given), err)
	}
	for _, r := range given {
		if r.textLater || r.doc != 0 || r.Content != texts[r.EventID] {
			t.Errorf("%s was given %.30q (later: %v, doc %d), want its text", r.EventID, r.Content, r.textLater, r.doc)
		}
	}

	rs = search()
	if err := store.DeleteSession(ctx, o, "s"); err != nil {
		t.Fatal(err)
	}
	if err := store.db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	given, err = store.texts(ctx, o, rs)
	if err != nil || len(given) != 1 || given[0].EventID != "q" {
		t.Fatalf("after the session was deleted, gave %+v (%v); want only the question, whose text came with it", given, err)
	}
}

// Through an index on a file, a search returns its results' whole texts,
// and a brief question still gives its long reply part of its score.
func TestAFileIndexReturnsWholeTextsAndCreditsReplies(t *testing.T) {
	ctx := t.Context()
	x, err := NewKeyword(WithFile(filepath.Join(t.TempDir(), "index.db")), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r := rand.New(rand.NewPCG(7, 8))
	long := func(first string) string {
		words := []string{first}
		for range 150 {
			words = append(words, strconv.FormatUint(r.Uint64(), 36)[:2+r.IntN(6)])
		}
		return strings.Join(words, " ")
	}
	sessions := session.NewInMemoryService()
	created, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	said := []string{"What did you plant by the fence?", long("Tulips, by the fence."), long("Fence"), long("fence fence")}
	for i, text := range said {
		author := []string{"bob", "ann"}[i%2]
		if err := sessions.AppendEvent(ctx, created.Session, &session.Event{Author: author, Message: session.NewTextMessage(session.RoleUser, text)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Index(ctx, created.Session); err != nil {
		t.Fatal(err)
	}
	if err := x.store.(*diskStore).db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := x.Search(ctx, &SearchRequest{AppName: "app", UserID: "u", Query: "fence planted", Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	credited := false
	for _, res := range resp.Results {
		if !slices.Contains(said, res.Content) || res.textLater {
			t.Errorf("%s came with %.30q, want its whole text", res.EventID, res.Content)
		}
		_, ok := res.Signals[SignalReply]
		credited = credited || ok && strings.HasPrefix(res.Content, "Tulips")
	}
	if len(resp.Results) != 4 || !credited {
		t.Errorf("found %d results, the reply credited: %v; want 4, the reply to the question credited", len(resp.Results), credited)
	}
}
