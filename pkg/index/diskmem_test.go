package index

import (
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// The index on disk ranks exactly as the one in memory (same documents,
// same scores, same order), whatever is still in memory and whatever the
// file holds: documents are written, sessions deleted and the memory
// flushed at random points, and after each step random searches, filtered
// or not, must agree to the last bit of every score.
func TestTheFileRanksAsMemoryDoes(t *testing.T) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	inMemory, err := NewKeyword(WithSessions(sessions), WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := NewKeyword(WithFile(filepath.Join(t.TempDir(), "index.db")), WithSessions(sessions), WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer onDisk.Close()
	for _, idx := range []*Index{inMemory, onDisk} {
		if err := idx.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	store := onDisk.store.(*diskStore)
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"garden", "river", "zeppelin", "tea", "lisbon", "peanut", "dog", "park", "run", "runs", "green", "flight", "May", "Caroline"}
	sentence := func(n int) string {
		s := ""
		for i := range n {
			if i > 0 {
				s += " "
			}
			s += words[r.IntN(len(words))]
		}
		return s
	}
	users := []string{"ann", "bob", "cyd"}
	handles := map[string]session.Session{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for step := range 200 {
		user := users[r.IntN(len(users))]
		sid := fmt.Sprintf("%s-s%d", user, r.IntN(4))
		switch p := r.Float64(); {
		case p < 0.08 && handles[sid] != nil:
			if err := sessions.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: user, SessionID: sid}); err != nil {
				t.Fatal(err)
			}
			delete(handles, sid)
			for _, idx := range []*Index{inMemory, onDisk} {
				if err := idx.CatchUp(ctx, sessions); err != nil {
					t.Fatal(err)
				}
			}
		case p < 0.25:
			if err := store.db.flush(ctx); err != nil {
				t.Fatal(err)
			}
		default:
			if handles[sid] == nil {
				resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: sid})
				if err != nil {
					t.Fatal(err)
				}
				handles[sid] = resp.Session
			}
			for range 1 + r.IntN(5) {
				ev := &session.Event{Author: []string{"user", "Caroline", "Mel"}[r.IntN(3)], Timestamp: base.Add(time.Duration(r.IntN(1000)) * time.Hour),
					Message: session.NewTextMessage([]string{session.RoleUser, session.RoleAssistant}[r.IntN(2)], sentence(1+r.IntN(12)))}
				if err := sessions.AppendEvent(ctx, handles[sid], ev); err != nil {
					t.Fatal(err)
				}
			}
			for _, idx := range []*Index{inMemory, onDisk} {
				if err := idx.Index(ctx, handles[sid]); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 8 {
			req := &SearchRequest{Query: sentence(1 + r.IntN(3)), AppName: "app", UserID: users[r.IntN(len(users))], Limit: 1 + r.IntN(20)}
			switch r.IntN(4) {
			case 0:
				req.Filter.Author = "Caroline"
			case 1:
				req.Filter.After = base.Add(time.Duration(r.IntN(1000)) * time.Hour)
			}
			want, err := inMemory.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := onDisk.Search(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := ranking(got.Results), ranking(want.Results); a != b {
				t.Fatalf("step %d, %+v:\non disk   %s\nin memory %s", step, *req, a, b)
			}
		}
	}
}

func ranking(rs []SearchResult) string {
	out := ""
	for _, r := range rs {
		out += fmt.Sprintf("%s/%s %v %d|", r.SessionID, r.EventID, r.Score, r.Timestamp.UnixNano())
	}
	return out
}

// A search while documents are flushed to the file sees each of them once:
// never none of an acknowledged one, never one twice.
func TestASearchDuringAFlushSeesEachDocumentOnce(t *testing.T) {
	ctx := t.Context()
	store := openKeywordFile(t)
	o := Owner{"app", "u"}
	var mu sync.Mutex
	written := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3000 {
			doc := StoredDoc{Document: Document{SessionID: "s", EventID: fmt.Sprint(i), Seq: int64(i), Text: "marker"}, Terms: []string{"marker"}}
			if err := store.Write(ctx, o, []StoredDoc{doc}); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			written++
			mu.Unlock()
			if i%97 == 0 {
				if err := store.db.flush(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for searching := true; searching; {
		select {
		case <-done:
			searching = false
		default:
		}
		mu.Lock()
		before := written
		mu.Unlock()
		rs, err := store.Search(ctx, o, StoreQuery{Terms: []string{"marker"}, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		after := written
		mu.Unlock()
		seen := map[string]bool{}
		for _, r := range rs {
			if seen[r.EventID] {
				t.Fatalf("event %s found twice among %d results", r.EventID, len(rs))
			}
			seen[r.EventID] = true
		}
		if len(rs) < before || len(rs) > after+1 { // one more may be written, not yet counted
			t.Fatalf("found %d documents, with %d written before the search and %d after", len(rs), before, after)
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A vector embedded in the background finds its document wherever it is:
// in the file (the first turn, flushed before it is embedded) or, mostly,
// still in memory (the second, embedded at once).
func TestBackgroundVectorsReachDocumentsInMemoryAndInTheFile(t *testing.T) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	gate := newGatedEmbedder(t, "zeppelin", "lighthouse")
	idx := openBackground(t, sessions, gate, 100, WithFile(filepath.Join(t.TempDir(), "index.db")), WithLogger(quiet()))
	defer idx.Close()
	db := idx.store.(*diskStore).db
	s := newSession(t, sessions, "s")
	appendTurn(t, ctx, sessions, s, "a zeppelin over the bay")
	if err := idx.Index(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := db.flush(ctx); err != nil { // its terms in the file, its vector still to come
		t.Fatal(err)
	}
	gate.release()
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	appendTurn(t, ctx, sessions, s, "a lighthouse on the cape")
	if err := idx.Index(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{"zeppelin", "lighthouse"} {
		if signals := signalsOf(t, idx, query, "s"); signals["vector"].Rank == 0 || signals["keyword"].Rank == 0 {
			t.Errorf("%s: found by %v; want its words and its vector", query, signals)
		}
	}
}

// A document written again with other words replaces the one before,
// in memory or in the file: its old words find nothing, and the owner
// counts one document.
func TestADocumentWrittenAgainReplacesItsWords(t *testing.T) {
	ctx := t.Context()
	store := openKeywordFile(t)
	o := Owner{"app", "u"}
	for _, words := range [][]string{{"alpha"}, {"beta"}, {"gamma", "gamma"}} {
		doc := StoredDoc{Document: Document{SessionID: "s", EventID: "e", Text: words[0]}, Terms: words}
		if err := store.Write(ctx, o, []StoredDoc{doc}); err != nil {
			t.Fatal(err)
		}
	}
	for word, want := range map[string]int{"alpha": 0, "beta": 0, "gamma": 1} {
		rs, err := store.Search(ctx, o, StoreQuery{Terms: []string{word}, Limit: 10})
		if err != nil || len(rs) != want {
			t.Errorf("%s: %d results, %v; want %d", word, len(rs), err, want)
		}
	}
	var docs, length int64
	if err := store.db.row(ctx, `SELECT docs, length FROM owners`).Scan(&docs, &length); err != nil || docs != 1 || length != 2 {
		t.Errorf("the owner counts %d documents of total length %d (%v); want 1 of 2", docs, length, err)
	}
}

// openKeywordFile opens a keyword store in a new file, closed at the end of the test.
func openKeywordFile(t *testing.T) *diskStore {
	store := newDiskStore(filepath.Join(t.TempDir(), "index.db"), quiet)
	if err := store.Open(t.Context(), Schema{Fingerprint: "test", Terms: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// A checkpoint (copying the journal into the file) holds nothing that
// writes, flushes or searches wait for: while one is held open, a
// document is written, flushed to the file and found. Inside a flush's
// commit, as SQLite's automatic checkpoint runs, it held every search
// for as long as it took (up to a second, on LongMemEval's load).
func TestACheckpointHoldsNoSearchNorWrite(t *testing.T) {
	ctx := t.Context()
	store := openKeywordFile(t)
	o := Owner{"app", "u"}
	write := func(id string) {
		t.Helper()
		doc := StoredDoc{Document: Document{SessionID: "s", EventID: id, Text: "marker"}, Terms: []string{"marker"}}
		if err := store.Write(ctx, o, []StoredDoc{doc}); err != nil {
			t.Fatal(err)
		}
		if err := store.db.flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write("before")
	entered, release := make(chan struct{}), make(chan struct{})
	store.db.beforeCheckpoint = func() {
		close(entered)
		<-release
	}
	checkpointed := make(chan error)
	go func() {
		_, err := store.db.checkpointQuietly(ctx)
		checkpointed <- err
	}()
	<-entered
	write("during")
	rs, err := store.Search(ctx, o, StoreQuery{Terms: []string{"marker"}, Limit: 10})
	if err != nil || len(rs) != 2 {
		t.Fatalf("during a checkpoint: %d found (%v); want 2", len(rs), err)
	}
	close(release)
	if err := <-checkpointed; err != nil {
		t.Fatal(err)
	}
	var autocheckpoint int
	if err := store.db.row(ctx, `PRAGMA wal_autocheckpoint`).Scan(&autocheckpoint); err != nil || autocheckpoint != 0 {
		t.Errorf("wal_autocheckpoint is %d (%v); want 0: a commit must not checkpoint", autocheckpoint, err)
	}
}

// A quiet checkpoint copies the journal into the file: the file alone,
// without its journal, then holds every document flushed.
func TestAQuietCheckpointCopiesTheJournal(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	store := newDiskStore(filepath.Join(dir, "index.db"), quiet)
	if err := store.Open(ctx, Schema{Fingerprint: "test", Terms: true}); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i := range 100 {
		doc := StoredDoc{Document: Document{SessionID: "s", EventID: fmt.Sprint(i), Text: "marker"}, Terms: []string{"marker", fmt.Sprint("w", i)}}
		if err := store.Write(ctx, Owner{"app", fmt.Sprint("u", i%7)}, []StoredDoc{doc}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	docsInFileAlone := func() int {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "index.db"))
		if err != nil {
			t.Fatal(err)
		}
		alone := filepath.Join(t.TempDir(), "alone.db")
		if err := os.WriteFile(alone, b, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite3", "file:"+alone+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		n := 0
		db.QueryRow(`SELECT count(*) FROM docs`).Scan(&n) // before any checkpoint the file may not even hold the table
		return n
	}
	if n := docsInFileAlone(); n != 0 {
		t.Fatalf("the file alone holds %d documents before a checkpoint; want them in the journal only (a commit checkpointed)", n)
	}
	if _, err := store.db.checkpointQuietly(ctx); err != nil {
		t.Fatal(err)
	}
	if n := docsInFileAlone(); n != 100 {
		t.Errorf("the file alone holds %d documents after a checkpoint; want 100", n)
	}
	if store.db.committed.Load() {
		t.Error("still marked as written since the last checkpoint")
	}
}

// The file keeps no list of a document's terms: its postings are found by
// document when it is written again or deleted, and none is left behind,
// whatever else its owner holds: after a rewrite and a session's deletion

// The journal is started again once it grows past its bound, even while
// searches read it all the time (a quiet checkpoint copies it, but only a
// whole one lets the next write start it from its beginning).
func TestTheJournalIsKeptShort(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "index.db")
	store := newDiskStore(path, quiet)
	if err := store.Open(ctx, Schema{Fingerprint: "test", Terms: true}); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	defer func(was int64) { maxJournalPages = was }(maxJournalPages)
	maxJournalPages = 8
	o := Owner{"app", "u"}
	for i := range 400 {
		doc := StoredDoc{Document: Document{SessionID: "s", EventID: fmt.Sprint(i), Text: strings.Repeat("marker ", 100)}, Terms: []string{"marker", fmt.Sprint("w", i)}}
		if err := store.Write(ctx, o, []StoredDoc{doc}); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			if _, err := store.Search(ctx, o, StoreQuery{Terms: []string{"marker"}, Limit: 5}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := store.db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	journal := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if before := journal(); before < 8*diskPageSize {
		t.Fatalf("the journal holds %d bytes before: the test writes too little", before)
	}
	if err := store.db.checkpointJournal(ctx); err != nil {
		t.Fatal(err)
	}
	if after := journal(); after != 0 {
		t.Errorf("the journal holds %d bytes after a checkpoint past its bound, want it started again", after)
	}
	if rs, err := store.Search(ctx, o, StoreQuery{Terms: []string{"w399"}, Limit: 5}); err != nil || len(rs) != 1 {
		t.Errorf("after the checkpoint: %d found, %v", len(rs), err)
	}
}

// the postings are exactly the live documents' distinct terms.
func TestPostingsLeaveWithTheirDocument(t *testing.T) {
	ctx := t.Context()
	store := openKeywordFile(t)
	ann, bob := Owner{"app", "ann"}, Owner{"app", "bob"}
	doc := func(session, event string, words ...string) StoredDoc {
		return StoredDoc{Document: Document{SessionID: session, EventID: event, Text: words[0]}, Terms: words}
	}
	write := func(o Owner, docs ...StoredDoc) {
		t.Helper()
		if err := store.Write(ctx, o, docs); err != nil {
			t.Fatal(err)
		}
		if err := store.db.flush(ctx); err != nil { // into the file, where deletions look
			t.Fatal(err)
		}
	}
	write(ann, doc("s1", "e1", "tea", "lisbon", "tea"), doc("s1", "e2", "river", "tea"), doc("s2", "e3", "garden", "tea"))
	write(bob, doc("s1", "e1", "tea", "lisbon"))
	write(ann, doc("s1", "e1", "zeppelin")) // written again, other words
	if err := store.DeleteSession(ctx, ann, "s2"); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, err := store.db.query(ctx, `SELECT o.user, p.term, d.event FROM postings p JOIN owners o ON o.id = p.owner LEFT JOIN docs d ON d.id = p.owner << 32 | p.doc ORDER BY 1, 3, 2`)
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[int64]string{}
	for _, w := range []string{"tea", "lisbon", "river", "garden", "zeppelin"} {
		hashes[termHash(w)] = w
	}
	for rows.Next() {
		var user string
		var term int64
		var event sql.NullString
		if err := rows.Scan(&user, &term, &event); err != nil {
			t.Fatal(err)
		}
		left = append(left, fmt.Sprintf("%s/%s/%s", user, event.String, hashes[term]))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(left)
	want := []string{"ann/e1/zeppelin", "ann/e2/river", "ann/e2/tea", "bob/e1/lisbon", "bob/e1/tea"}
	if !slices.Equal(left, want) {
		t.Errorf("postings left %v; want %v", left, want)
	}
}
