package indextest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// Dump reads everything a store keeps, straight from where it keeps it
// (an engine's objects and tenants, a table's rows, a file), not through
// the store: one line per item, with every name and value it holds.
type Dump func(t testing.TB) []string

// RunErasure shows that forgetting a user (index.Index.Forget, what
// erasing a person does) leaves nothing of them in the store: two users'
// sessions are indexed, the first is forgotten, and then no item dump
// finds names them (their IDs, their owner's hash, their canary), and
// every item that was not theirs is there exactly as before. One of
// their sessions the index never heard was deleted: a document left
// behind by a missed tombstone goes too. The caller closes the store.
func RunErasure(t *testing.T, store index.Store, kind index.Kind, dump Dump) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	idx := External(t, kind, store, 64)
	if err := idx.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"erin", "frank"} {
		for i := range 3 {
			resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: fmt.Sprintf("%s-s%d", user, i)})
			if err != nil {
				t.Fatal(err)
			}
			for j := range 3 {
				text := fmt.Sprintf("%s remembers the %s-canary-%d%d by the river", user, user, i, j)
				ev := &session.Event{Author: user, Message: session.NewTextMessage(session.RoleUser, text)}
				if err := sessions.AppendEvent(ctx, resp.Session, ev); err != nil {
					t.Fatal(err)
				}
			}
			if err := idx.Index(ctx, resp.Session); err != nil {
				t.Fatal(err)
			}
		}
	}
	// erin-s2 is deleted from the sessions, and the index never told.
	if err := sessions.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "erin", SessionID: "erin-s2"}); err != nil {
		t.Fatal(err)
	}
	erin := index.Owner{App: "app", User: "erin"}
	names := func(line string) bool {
		return strings.Contains(line, "erin") || strings.Contains(line, erin.Key()[:16])
	}

	before := dump(t)
	var notHers []string
	for _, line := range before {
		if !names(line) {
			notHers = append(notHers, line)
		}
	}
	if len(notHers) == len(before) {
		t.Fatalf("nothing the dump found names erin: it does not see the store (%d items)", len(before))
	}
	n, err := idx.Forget(ctx, "app", "erin")
	if err != nil {
		t.Fatal(err)
	}
	if n != 9 {
		t.Errorf("Forget found %d documents, want erin's 9", n)
	}
	after := dump(t)
	for _, line := range after {
		if names(line) {
			t.Errorf("left after forgetting erin: %.300s", line)
		}
	}
	slices.Sort(notHers)
	slices.Sort(after)
	for _, line := range notHers {
		if _, found := slices.BinarySearch(after, line); !found {
			t.Errorf("not erin's, and gone or changed: %.300s", line)
		}
	}
	if len(after) != len(notHers) {
		t.Errorf("%d items after, want the %d that were not erin's", len(after), len(notHers))
	}
	if again, err := idx.Forget(ctx, "app", "erin"); err != nil || again != 0 {
		t.Errorf("forgetting erin again found %d, %v; want 0", again, err)
	}
	found, err := idx.Search(ctx, &index.SearchRequest{Query: "river canary", AppName: "app", UserID: "frank", Limit: 20})
	if err != nil || len(found.Results) != 9 {
		t.Errorf("searching frank after erin was forgotten: %d results, %v; want his 9", len(found.Results), err)
	}
}
