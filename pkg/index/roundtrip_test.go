package index

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/session"
)

// countingStore counts the calls that reach a store. Wrapped, the
// in-process store looks to the index like any external one.
type countingStore struct {
	Store
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingStore) count(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[call]++
}

func (c *countingStore) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	return out
}

func (c *countingStore) Open(ctx context.Context, s Schema) error {
	c.count("Open")
	return c.Store.Open(ctx, s)
}

func (c *countingStore) Ready(ctx context.Context) error {
	c.count("Ready")
	return c.Store.Ready(ctx)
}

func (c *countingStore) Write(ctx context.Context, o Owner, docs []StoredDoc) error {
	c.count("Write")
	return c.Store.Write(ctx, o, docs)
}

func (c *countingStore) DeleteSession(ctx context.Context, o Owner, sessionID string) error {
	c.count("DeleteSession")
	return c.Store.DeleteSession(ctx, o, sessionID)
}

func (c *countingStore) Missing(ctx context.Context, o Owner, sessionID string, eventIDs []string) ([]string, error) {
	c.count("Missing")
	return c.Store.Missing(ctx, o, sessionID, eventIDs)
}

func (c *countingStore) Search(ctx context.Context, o Owner, q StoreQuery) ([]SearchResult, error) {
	c.count("Search")
	return c.Store.Search(ctx, o, q)
}

// follower leads the feed or not, as a replica's SQL position would say.
type follower struct {
	Position
	leads bool
}

func (f follower) Lead(context.Context) (bool, error) { return f.leads, nil }

// Appending a turn and indexing it costs one write to an external store and
// at most one other round trip (asking which events it lacks), whether the
// process leads the feed or another replica does, and whatever the handle
// holds: the whole session or only its newest events.
func TestAnAppendCostsOneRoundTripBeyondTheWrite(t *testing.T) {
	hash, err := embed.NewHash(64)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range Kinds {
		for _, leads := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/leads=%v", kind, leads), func(t *testing.T) {
				ctx := t.Context()
				sessions := session.NewInMemoryService()
				store := &countingStore{Store: &memoryStore{vectors: flatStore{}, shards: map[Owner]*memoryShard{}}, calls: map[string]int{}}
				idx, err := New(kind, store, hash, follower{NewInMemoryPosition(), leads}, WithSessions(sessions))
				if err != nil {
					t.Fatal(err)
				}
				if err := idx.Start(ctx); err != nil {
					t.Fatal(err)
				}
				if err := idx.CatchUp(ctx, sessions); err != nil {
					t.Fatal(err)
				}
				resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
				if err != nil {
					t.Fatal(err)
				}
				for turn := range 20 {
					events := []*session.Event{
						{Author: "user", Message: session.NewTextMessage(session.RoleUser, fmt.Sprintf("question %d about zeppelins", turn))},
						{Author: "agent", Message: session.NewTextMessage(session.RoleAssistant, fmt.Sprintf("answer %d", turn))},
					}
					if err := sessions.AppendEvents(ctx, resp.Session, events); err != nil {
						t.Fatal(err)
					}
					handle := resp.Session
					if turn%2 == 1 { // a handle loaded with its newest events only
						got, err := sessions.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s", NumRecentEvents: 2})
						if err != nil {
							t.Fatal(err)
						}
						handle = got.Session
					}
					store.take()
					if err := idx.Index(ctx, handle); err != nil {
						t.Fatal(err)
					}
					calls := store.take()
					others := 0
					for call, n := range calls {
						if call != "Write" {
							others += n
						}
					}
					if calls["Write"] != 1 || others > 1 {
						t.Fatalf("turn %d cost %v; want one Write and at most one other call", turn, calls)
					}
				}
				found, err := idx.Search(ctx, &SearchRequest{Query: "zeppelins question", AppName: "app", UserID: "u", Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				questions := 0
				for _, r := range found.Results {
					if strings.HasPrefix(r.Content, "question ") {
						questions++
					}
				}
				if questions != 20 {
					t.Errorf("%d of the 20 questions found", questions)
				}
			})
		}
	}
}

// A replica that does not lead the feed still applies the deletions past
// the cursor when it catches up, so a session deleted through it is gone
// from the shared store at once; it leaves the appends to the leader.
func TestAReplicaThatDoesNotLeadAppliesDeletions(t *testing.T) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	store := &countingStore{Store: &memoryStore{vectors: flatStore{}, shards: map[Owner]*memoryShard{}}, calls: map[string]int{}}
	idx, err := New(KindKeyword, store, nil, follower{NewInMemoryPosition(), false}, WithSessions(sessions))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"kept", "gone"} {
		resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		if err := sessions.AppendEvent(ctx, resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "zeppelin tickets for "+id)}); err != nil {
			t.Fatal(err)
		}
		if err := idx.Index(ctx, resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	if err := sessions.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "gone"}); err != nil {
		t.Fatal(err)
	}
	store.take()
	if err := idx.CatchUp(ctx, sessions); err != nil {
		t.Fatal(err)
	}
	if calls := store.take(); calls["Write"] != 0 || calls["DeleteSession"] != 1 {
		t.Errorf("catching up without the lead made %v; want one DeleteSession and no write", calls)
	}
	found, err := idx.Search(ctx, &SearchRequest{Query: "zeppelin", AppName: "app", UserID: "u"})
	if err != nil || len(found.Results) != 1 || found.Results[0].SessionID != "kept" {
		t.Errorf("after the deletion: %+v, %v; want only the kept session", found, err)
	}
}
