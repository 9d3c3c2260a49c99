package index

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/session"
)

// gatedEmbedder embeds queries at once and documents only while its gate
// is open: it stands for an embedder too slow for an append to wait on.
type gatedEmbedder struct {
	embed.Embedder
	queries map[string]bool

	entered chan []string // the documents it was asked to embed, as it is

	mu   sync.Mutex
	open chan struct{}
}

func newGatedEmbedder(t *testing.T, queries ...string) *gatedEmbedder {
	hash, err := embed.NewHash(64)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedEmbedder{Embedder: hash, queries: map[string]bool{}, open: make(chan struct{}), entered: make(chan []string, 100)}
	for _, q := range queries {
		g.queries[q] = true
	}
	return g
}

func (g *gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) != 1 || !g.queries[texts[0]] {
		select {
		case g.entered <- texts:
		default:
		}
		g.mu.Lock()
		open := g.open
		g.mu.Unlock()
		select {
		case <-open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Embedder.Embed(ctx, texts)
}

func (g *gatedEmbedder) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
}

// shut closes the gate again.
func (g *gatedEmbedder) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = make(chan struct{})
}

func openBackground(t *testing.T, sessions session.Service, e embed.Embedder, maxLag int, opts ...Option) *Index {
	t.Helper()
	idx, err := NewHybrid(e, append(opts, WithSessions(sessions), WithBackgroundVectors(maxLag))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return idx
}

func appendTurn(t *testing.T, ctx context.Context, sessions session.Service, s session.Session, text string) {
	t.Helper()
	if err := sessions.AppendEvent(ctx, s, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)}); err != nil {
		t.Fatal(err)
	}
}

func newSession(t *testing.T, sessions session.Service, id string) session.Session {
	t.Helper()
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Session
}

// signalsOf returns the signals of the search's result from session s.
func signalsOf(t *testing.T, idx *Index, query, sessionID string) map[string]Signal {
	t.Helper()
	found, err := idx.Search(t.Context(), &SearchRequest{Query: query, AppName: "app", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range found.Results {
		if r.SessionID == sessionID {
			return r.Signals
		}
	}
	return nil
}

// With vectors embedded in the background, an append returns before its
// document is embedded, and a search finds it by its words at once; its
// vector follows.
func TestAnAppendDoesNotWaitForItsVector(t *testing.T) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	gate := newGatedEmbedder(t, "zeppelin")
	idx := openBackground(t, sessions, gate, 100)
	defer idx.Close()

	s := newSession(t, sessions, "s")
	appendTurn(t, ctx, sessions, s, "we booked a zeppelin ride")
	if err := idx.Index(ctx, s); err != nil {
		t.Fatal(err)
	}
	signals := signalsOf(t, idx, "zeppelin", "s")
	if _, ok := signals["keyword"]; !ok {
		t.Fatalf("right after the append, the search found %v; want the document by its words", signals)
	}
	if _, ok := signals["vector"]; ok {
		t.Fatalf("the document has a vector before its embedder answered: %v", signals)
	}
	if vectors, background, err := idx.VectorCursor(ctx); err != nil || !background || vectors != 0 {
		t.Fatalf("VectorCursor = %d, %v, %v; want 0, background", vectors, background, err)
	}

	gate.release()
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	if signals := signalsOf(t, idx, "zeppelin", "s"); signals["vector"].Rank == 0 {
		t.Fatalf("after the lane caught up the search found %v; want the vector signal too", signals)
	}
	terms, _ := idx.Cursor(ctx)
	if vectors, _, _ := idx.VectorCursor(ctx); vectors != terms {
		t.Errorf("vectors at %d, terms at %d; want them level", vectors, terms)
	}
}

// An append waits for the lane once vectors lag more changes behind than
// the limit: its document is written with its terms first.
func TestAnAppendWaitsWhenVectorsLagPastTheLimit(t *testing.T) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	gate := newGatedEmbedder(t, "zeppelin")
	idx := openBackground(t, sessions, gate, 1)
	defer idx.Close()

	s := newSession(t, sessions, "s")
	appendTurn(t, ctx, sessions, s, "first zeppelin")
	if err := idx.Index(ctx, s); err != nil {
		t.Fatalf("one change behind, within the limit: %v", err)
	}
	appendTurn(t, ctx, sessions, s, "second zeppelin")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := idx.Index(cancelled, s); !errors.Is(err, context.Canceled) {
		t.Fatalf("two changes behind a limit of one: Index returned %v; want it to wait (and see its context end)", err)
	}
	found, err := idx.Search(ctx, &SearchRequest{Query: "zeppelin", AppName: "app", UserID: "u"})
	if err != nil || len(found.Results) != 2 {
		t.Fatalf("while waiting, the search found %+v, %v; want both turns by their words", found, err)
	}

	gate.release()
	appendTurn(t, ctx, sessions, s, "third zeppelin")
	if err := idx.Index(ctx, s); err != nil {
		t.Fatalf("with the embedder answering: %v", err)
	}
}

// Appends do not wait for vectors that lagged before they came: an index
// started behind the feed (as after an upgrade to another embedder) or sent
// back to its start by a rebuild. Once the lane has caught up, the limit
// holds again.
func TestAppendsDoNotWaitForALagTheyDidNotMake(t *testing.T) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	s := newSession(t, sessions, "s")
	for range 5 {
		appendTurn(t, ctx, sessions, s, "an older zeppelin")
	}
	gate := newGatedEmbedder(t, "zeppelin")
	idx := openBackground(t, sessions, gate, 1)
	defer idx.Close()
	waits := func(when string, want bool) {
		t.Helper()
		appendTurn(t, ctx, sessions, s, "a newer zeppelin")
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		err := idx.Index(cancelled, s)
		if want && !errors.Is(err, context.Canceled) || !want && err != nil {
			t.Fatalf("%s: Index returned %v; want it to wait: %v", when, err, want)
		}
	}

	waits("started five changes behind a limit of one", false)
	waits("six behind", false)
	gate.release()
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	gate.shut()
	waits("caught up, one behind", false)
	waits("caught up, then two behind", true)

	gate.release()
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	gate.shut()
	if err := idx.Rebuild(ctx, sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	waits("rebuilt, every vector to come again", false)
	waits("rebuilt, and another append", false)
}

// Vectors the lane had not written when the process stopped are written
// after it starts again: the snapshot keeps how far they got.
func TestBackgroundVectorsResumeAfterARestart(t *testing.T) {
	for name, kept := range persisted {
		t.Run(name, func(t *testing.T) { testBackgroundVectorsResume(t, kept) })
	}
}

// persisted are the ways an index in process is kept across a restart.
var persisted = map[string]func(path string) Option{"snapshot": WithSnapshot, "file": WithFile}

func testBackgroundVectorsResume(t *testing.T, kept func(string) Option) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	path := filepath.Join(t.TempDir(), "index")
	gate := newGatedEmbedder(t, "zeppelin")
	idx := openBackground(t, sessions, gate, 100, kept(path))
	s := newSession(t, sessions, "s")
	appendTurn(t, ctx, sessions, s, "a zeppelin over the bay")
	if err := idx.Index(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}

	open := newGatedEmbedder(t, "zeppelin")
	open.release()
	idx = openBackground(t, sessions, open, 100, kept(path))
	defer idx.Close()
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	if signals := signalsOf(t, idx, "zeppelin", "s"); signals["vector"].Rank == 0 || signals["keyword"].Rank == 0 {
		t.Fatalf("after the restart the search found %v; want both signals", signals)
	}
}

// A session deleted while the lane is embedding its documents stays
// deleted: the lane writes only documents the store still holds.
func TestTheLaneDoesNotBringBackADeletedSession(t *testing.T) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	gate := newGatedEmbedder(t, "zeppelin")
	idx := openBackground(t, sessions, gate, 100)
	defer idx.Close()

	for _, id := range []string{"kept", "gone"} {
		appendTurn(t, ctx, sessions, newSession(t, sessions, id), "zeppelin tickets for "+id)
	}
	if err := idx.CatchUp(ctx, sessions); err != nil {
		t.Fatal(err)
	}
	if texts := <-gate.entered; len(texts) != 2 {
		t.Fatalf("the lane embeds %q; want both sessions' documents in one batch", texts)
	}
	if err := sessions.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "gone"}); err != nil {
		t.Fatal(err)
	}
	if err := idx.CatchUp(ctx, sessions); err != nil {
		t.Fatal(err)
	}
	gate.release()
	if err := idx.AwaitVectors(ctx); err != nil {
		t.Fatal(err)
	}
	found, err := idx.Search(ctx, &SearchRequest{Query: "zeppelin", AppName: "app", UserID: "u"})
	if err != nil || len(found.Results) != 1 || found.Results[0].SessionID != "kept" {
		t.Fatalf("after the lane caught up: %+v, %v; want only the kept session", found, err)
	}
	if signals := found.Results[0].Signals; signals["vector"].Rank == 0 {
		t.Errorf("the kept session has no vector: %v", signals)
	}
}

// Vectors may lag what the lane embeds in catchUpWithin at its measured
// rate: at least two batches, at most the configured limit, and the limit
// until the lane has measured itself.
func TestVectorLagIsBoundedByTheLanesRate(t *testing.T) {
	l := newVectorLane(NewInMemoryPosition(), 100_000)
	if got := l.bound(); got != 100_000 {
		t.Errorf("before any batch: bound %d, want the limit", got)
	}
	l.measured(100, time.Second) // 100 changes a second
	if got, want := l.bound(), int64(100*catchUpWithin.Seconds()); got != want {
		t.Errorf("at 100 changes a second: bound %d, want %d", got, want)
	}
	l.measured(100, 2*time.Second) // slower: the average moves a fifth of the way
	if got, want := l.bound(), int64((0.8*100+0.2*50)*catchUpWithin.Seconds()); got != want {
		t.Errorf("after a slower batch: bound %d, want %d", got, want)
	}
	slow := newVectorLane(NewInMemoryPosition(), 100_000)
	slow.measured(1, time.Minute)
	if got := slow.bound(); got != 2*laneBatch {
		t.Errorf("a crawling embedder: bound %d, want two batches (%d)", got, 2*laneBatch)
	}
	if got := l.eta(1800); got != 20*time.Second {
		t.Errorf("1,800 changes at 90 a second: eta %v, want 20s", got)
	}
	if got := newVectorLane(NewInMemoryPosition(), 1).eta(1000); got != 0 {
		t.Errorf("before any batch: eta %v, want 0 (unknown)", got)
	}
	fast := newVectorLane(NewInMemoryPosition(), 1000)
	fast.measured(1_000_000, time.Second)
	if got := fast.bound(); got != 1000 {
		t.Errorf("a fast embedder: bound %d, want the limit", got)
	}
}
