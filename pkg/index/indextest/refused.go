package indextest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// Refusing is a store that refuses, as an engine may (a 400, PostgreSQL's
// "invalid byte sequence"), any write holding a document whose text holds
// "poison" while Refuse is set, and answers nothing while Down is set.
type Refusing struct {
	index.Store
	Refuse atomic.Bool
	Down   atomic.Bool
}

// NewRefusing returns store, refusing poison.
func NewRefusing(store index.Store) *Refusing {
	r := &Refusing{Store: store}
	r.Refuse.Store(true)
	return r
}

var (
	errPoison = errors.New("400 Bad Request: the document cannot be stored")
	errDown   = errors.New("connection refused")
)

func (s *Refusing) check(docs []index.StoredDoc) error {
	if s.Down.Load() {
		return errDown
	}
	if s.Refuse.Load() && slices.ContainsFunc(docs, func(d index.StoredDoc) bool { return strings.Contains(d.Text, "poison") }) {
		return errPoison
	}
	return nil
}

func (s *Refusing) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	if err := s.check(docs); err != nil {
		return err
	}
	return s.Store.Write(ctx, o, docs)
}

func (s *Refusing) Ready(ctx context.Context) error {
	if s.Down.Load() {
		return errDown
	}
	return s.Store.Ready(ctx)
}

func (s *Refusing) Begin(ctx context.Context, schema index.Schema) (index.StoreBuild, error) {
	b, err := s.Store.Begin(ctx, schema)
	return &refusingBuild{b, s}, err
}

type refusingBuild struct {
	index.StoreBuild
	s *Refusing
}

func (b *refusingBuild) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	if err := b.s.check(docs); err != nil {
		return err
	}
	return b.StoreBuild.Write(ctx, o, docs)
}

// A document the store refuses is skipped by the follower and by a
// rebuild, reported, and retried by the next rebuild: the changes after it,
// every other user's included, are indexed. A store that is down stops the
// follower instead, skipping nothing.
func testRefusedDocument(t *testing.T, newStore StoreFactory, kind index.Kind) {
	sessions := session.NewInMemoryService()
	store := NewRefusing(newStore(t, ""))
	quiet := index.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	idx := External(t, kind, store, 64, quiet)
	catchUp := func(what string) {
		t.Helper()
		if err := idx.CatchUp(t.Context(), sessions); err != nil {
			t.Fatalf("%s: CatchUp = %v, want the refused document skipped", what, err)
		}
		assertNoLag(t, idx, sessions)
	}
	found := func(user, query string) []string {
		t.Helper()
		resp, err := idx.Search(t.Context(), &index.SearchRequest{Query: query, AppName: "app", UserID: user, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return contents(resp.Results)
	}

	appendText(t, sessions, "app", "alice", "a", "the zeppelin leaves at noon")
	bob := appendText(t, sessions, "app", "bob", "b", "a poison zeppelin ticket")
	if err := sessions.AppendEvent(t.Context(), bob, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "the zeppelin lands at dusk")}); err != nil {
		t.Fatal(err)
	}
	poisonID := bob.Events().At(0).ID
	appendText(t, sessions, "app", "carol", "c", "carol rides the zeppelin")
	catchUp("following the feed")

	if got := found("alice", "zeppelin"); len(got) != 1 {
		t.Errorf("alice finds %q, want her event", got)
	}
	if got := found("bob", "zeppelin"); !slices.Equal(got, []string{"the zeppelin lands at dusk"}) {
		t.Errorf("bob finds %q, want the event after the refused one, and not the refused one", got)
	}
	if got := found("carol", "zeppelin"); len(got) != 1 {
		t.Errorf("carol finds %q, want her event, appended after the refused one", got)
	}
	skips := idx.Skipped()
	if skips.Total != 1 || len(skips.Recent) != 1 {
		t.Fatalf("Skipped = %+v, want the one refused document", skips)
	}
	if r := skips.Recent[0]; r.AppName != "app" || r.UserID != "bob" || r.SessionID != "b" || r.EventID != poisonID || !strings.Contains(r.Error, "cannot be stored") {
		t.Errorf("Skipped names %+v, want app/bob/b/%s and the store's reason", r, poisonID)
	}

	// A rebuild while the store still refuses completes, and says so again.
	if err := idx.Rebuild(t.Context(), sessions, "", ""); err != nil {
		t.Fatalf("a rebuild with a refused document = %v, want it to complete without it", err)
	}
	if skips := idx.Skipped(); skips.Total != 2 || len(skips.Recent) != 1 {
		t.Errorf("after a rebuild that skipped it again: %+v, want total 2 and the one document still to retry", skips)
	}
	if got := found("carol", "zeppelin"); len(got) != 1 {
		t.Errorf("after the rebuild carol finds %q", got)
	}

	// Once the store takes it, a rebuild indexes it and the report is clear.
	store.Refuse.Store(false)
	if err := idx.Rebuild(t.Context(), sessions, "app", "bob"); err != nil {
		t.Fatal(err)
	}
	if skips := idx.Skipped(); len(skips.Recent) != 0 {
		t.Errorf("after a rebuild that indexed it: still reported %+v", skips.Recent)
	}
	if got := found("bob", "poison"); !slices.Contains(got, "a poison zeppelin ticket") {
		t.Errorf("after the rebuild bob finds %q for the once refused event", got)
	}

	// A store that is down is not a document's fault: nothing is skipped,
	// the follower stops where it is and goes on when the store is back.
	store.Refuse.Store(true)
	store.Down.Store(true)
	appendText(t, sessions, "app", "dave", "d", "dave missed the zeppelin")
	before, err := idx.Cursor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.CatchUp(t.Context(), sessions); err == nil {
		t.Error("CatchUp on a store that is down succeeded")
	}
	if after, _ := idx.Cursor(t.Context()); after != before {
		t.Errorf("the cursor moved from %d to %d while the store was down", before, after)
	}
	if skips := idx.Skipped(); skips.Total != 2 {
		t.Errorf("a store that is down made the follower skip: %+v", skips)
	}
	store.Down.Store(false)
	catchUp("once the store is back")
	if got := found("dave", "zeppelin"); len(got) != 1 {
		t.Errorf("dave finds %q once the store is back", got)
	}
}

// assertNoLag fails unless idx has applied the whole change feed.
func assertNoLag(t *testing.T, idx index.Live, sessions session.Service) {
	t.Helper()
	cursor, err := idx.Cursor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sessions.Changes(t.Context(), &session.ChangesRequest{After: cursor, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Head != cursor {
		t.Errorf("the index is at %d of the feed's %d", cursor, resp.Head)
	}
}
