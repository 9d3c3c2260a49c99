package index_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/session"
)

func TestKeywordOnDisk(t *testing.T) {
	indextest.RunOnDisk(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewKeyword(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

func TestVectorOnDisk(t *testing.T) {
	indextest.RunOnDisk(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewVector(hashEmbedder(t, 0), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

func TestHybridOnDisk(t *testing.T) {
	indextest.RunOnDisk(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx, err := index.NewHybrid(hashEmbedder(t, 0), append([]index.Option{index.WithStemming(true)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	})
}

// gatedFeed holds the change feed's pages (not the probe of its head)
// until released.
type gatedFeed struct {
	session.Service
	open chan struct{}
}

func (g gatedFeed) Changes(ctx context.Context, req *session.ChangesRequest) (*session.ChangesResponse, error) {
	if req.Limit != 1 {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Service.Changes(ctx, req)
}

// farBehind returns sessions holding one session of 2,500 turns (past what
// a start catches up on before it returns), each its number in format.
func farBehind(t *testing.T, format string) (session.Service, session.Session) {
	t.Helper()
	sessions := session.NewInMemoryService()
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "a", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2500 {
		text := fmt.Sprintf(format, i)
		if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)}); err != nil {
			t.Fatal(err)
		}
	}
	return sessions, resp.Session
}

// startHeld starts a keyword index in the file at path on sessions' feed,
// whose pages it holds, and checks that the start did not wait for them:
// the index says it is catching up, and a search answers. release lets
// the feed go and waits for the catch-up to end.
func startHeld(t *testing.T, path string, sessions session.Service) (idx *index.Index, release func()) {
	t.Helper()
	feed := gatedFeed{Service: sessions, open: make(chan struct{})}
	idx, err := index.NewKeyword(index.WithFile(path), index.WithSessions(feed), quietLogs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	if err := idx.Start(t.Context()); err != nil { // returns with the feed held: it did not wait for it
		t.Fatal(err)
	}
	if !idx.CatchingUp() {
		t.Fatal("started 2,500 changes behind the feed, the index does not say it is catching up")
	}
	if _, err := idx.Search(t.Context(), &index.SearchRequest{Query: "garden", AppName: "a", UserID: "u"}); err != nil {
		t.Fatalf("a search while catching up: %v", err)
	}
	return idx, func() {
		close(feed.open)
		for idx.CatchingUp() {
			runtime.Gosched() // the catch-up ends on its own: the test's deadline bounds the wait
		}
	}
}

// An index far behind the feed (an upgrade building it anew) starts at
// once and catches up in the background: searches answer meanwhile from
// what is applied, appends do not wait for it, and once it is done the
// index holds every event, those appended meanwhile too.
func TestAStartFarBehindCatchesUpInTheBackground(t *testing.T) {
	ctx := t.Context()
	sessions, s := farBehind(t, "turn %d about the garden")
	idx, release := startHeld(t, filepath.Join(t.TempDir(), "index.db"), sessions)
	late := &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "the zeppelin came late")}
	if err := sessions.AppendEvent(ctx, s, late); err != nil {
		t.Fatal(err)
	}
	if err := idx.Index(ctx, s); err != nil { // would block on the held feed if it waited
		t.Fatal(err)
	}
	release()
	got, err := idx.Search(ctx, &index.SearchRequest{Query: "zeppelin", AppName: "a", UserID: "u"})
	if err != nil || len(got.Results) != 1 {
		t.Fatalf("after the catch-up, the event appended meanwhile: %+v, %v", got, err)
	}
	all, err := idx.Search(ctx, &index.SearchRequest{Query: "turn 2499 garden", AppName: "a", UserID: "u", Limit: 1})
	if err != nil || len(all.Results) != 1 || all.Results[0].Content != "turn 2499 about the garden" {
		t.Fatalf("after the catch-up, the last event appended before the start: %+v, %v", all, err)
	}
}

// An index made another way (here unstemmed, then configured stemmed; the
// same goes for another embedder) starts anew at once and is built from
// the feed in the background, as an index far behind is: the start does
// not wait for the whole feed.
func TestAnIndexMadeAnotherWayIsBuiltAgainInTheBackground(t *testing.T) {
	ctx := t.Context()
	sessions, _ := farBehind(t, "turn %d about the gardens")
	path := filepath.Join(t.TempDir(), "index.db")
	unstemmed, err := index.NewKeyword(index.WithFile(path), index.WithSessions(sessions), index.WithStemming(false), quietLogs)
	if err != nil {
		t.Fatal(err)
	}
	if err := unstemmed.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for unstemmed.CatchingUp() {
		runtime.Gosched()
	}
	if err := unstemmed.Close(); err != nil {
		t.Fatal(err)
	}

	idx, release := startHeld(t, path, sessions)
	release()
	got, err := idx.Search(ctx, &index.SearchRequest{Query: "turn 2499 garden", AppName: "a", UserID: "u", Limit: 1})
	if err != nil || len(got.Results) != 1 || got.Results[0].Content != "turn 2499 about the gardens" {
		t.Fatalf("built again, stemmed (garden finds gardens): %+v, %v", got, err)
	}
}
