package index

import (
	"path/filepath"
	"testing"
)

// A user's vectors are read from memory after their first search, and a
// search after any change to the file sees the change: a vector flushed
// since is found, and an erased user's vectors leave memory.
func TestVectorSearchesSeeEveryChangeToTheFile(t *testing.T) {
	ctx := t.Context()
	// A hybrid index's file: a turn's words can be there before its vector.
	store := newDiskStore(filepath.Join(t.TempDir(), "index.db"), quiet)
	if err := store.Open(ctx, Schema{Fingerprint: "test", Dimensions: 3, Terms: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	o := Owner{"app", "u"}
	write := func(session, event string, v []float32) {
		t.Helper()
		if err := store.Write(ctx, o, []StoredDoc{{Document: Document{SessionID: session, EventID: event, Text: event}, Vector: v}}); err != nil {
			t.Fatal(err)
		}
		if err := store.db.flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	nearest := func() []string {
		t.Helper()
		rs, err := store.Search(ctx, o, StoreQuery{Vector: []float32{0, 1, 0}, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var events []string
		for _, r := range rs {
			events = append(events, r.EventID)
		}
		return events
	}
	write("s1", "a", []float32{1, 0, 0})
	if got := nearest(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("found %v, want [a]", got)
	}
	id, _, err := ownerID(ctx, store.db, o)
	if err != nil {
		t.Fatal(err)
	}
	if store.db.vectors.get(id) == nil {
		t.Fatal("the user's vectors are not kept after their search")
	}
	other := Owner{"app", "other"}
	if err := store.Write(ctx, other, []StoredDoc{{Document: Document{SessionID: "s", EventID: "x", Text: "x"}, Vector: []float32{0, 1, 0}}}); err != nil {
		t.Fatal(err)
	}
	if err := store.db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if store.db.vectors.get(id) == nil {
		t.Fatal("another user's flushed turn dropped the user's vectors from memory")
	}
	// A vector embedded after its turn's words were flushed is attached
	// to the turn in the file: another user's leaves the user's vectors
	// in memory, the user's own is found.
	lateDoc := func(owner Owner, event string, v []float32) {
		t.Helper()
		doc := StoredDoc{Document: Document{SessionID: "late", EventID: event, Text: event}}
		if err := store.Write(ctx, owner, []StoredDoc{doc}); err != nil {
			t.Fatal(err)
		}
		if err := store.db.flush(ctx); err != nil {
			t.Fatal(err)
		}
		nearest() // the user's vectors, read again if the flush dropped them
		doc.Vector = v
		if err := store.Write(ctx, owner, []StoredDoc{doc}); err != nil {
			t.Fatal(err)
		}
	}
	lateDoc(other, "y", []float32{0, 1, 0})
	if store.db.vectors.get(id) == nil {
		t.Fatal("a vector attached to another user's turn dropped the user's vectors from memory")
	}
	lateDoc(o, "c", []float32{0.1, 1, 0})
	if got := nearest(); len(got) != 2 || got[0] != "c" {
		t.Fatalf("after c's vector was attached, found %v, want [c a]", got)
	}
	write("s2", "b", []float32{0, 1, 0})
	if got := nearest(); len(got) != 3 || got[0] != "b" {
		t.Fatalf("after b was flushed, found %v, want [b c a]", got)
	}
	if err := store.DeleteSession(ctx, o, "s2"); err != nil {
		t.Fatal(err)
	}
	if err := store.db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := nearest(); len(got) != 2 || got[0] != "c" {
		t.Fatalf("after b's session was deleted, found %v, want [c a]", got)
	}
	if err := store.Prune(ctx, o, func(string, string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := store.DropOwner(ctx, o); err != nil {
		t.Fatal(err)
	}
	if c := store.db.vectors; c.size != 0 || len(c.byOwner) != 0 || c.lru.Len() != 0 {
		t.Errorf("after the user was erased, memory keeps %d bytes of %d owners' vectors", c.size, len(c.byOwner))
	}
	if got := nearest(); len(got) != 0 {
		t.Errorf("after the user was erased, found %v", got)
	}
}

// Vectors read before a commit are not kept after it, whoever it wrote; a
// commit drops the owners it wrote, or everyone; and the bytes kept stay
// within the limit, the least recently searched owners going first.
func TestOwnerVectorsStayCurrentAndBounded(t *testing.T) {
	c := newOwnerVectors()
	for _, commit := range []func(){c.changed, func() { c.wrote([]int64{1}) }, func() { c.wrote([]int64{2}) }} {
		e := c.reading(1)
		e.vecs = make([]byte, 100)
		commit()
		c.put(e)
		if c.get(1) != nil {
			t.Fatal("vectors read before a commit were kept after it")
		}
	}
	for owner := range int64(3) {
		c.put(c.reading(owner))
	}
	c.wrote([]int64{1, 7})
	if c.get(1) != nil || c.get(0) == nil || c.get(2) == nil {
		t.Errorf("after a commit that wrote owners 1 and 7, kept %v; want 0 and 2", keys(c.byOwner))
	}
	c.changed()
	if len(c.byOwner) != 0 || c.size != 0 {
		t.Errorf("after a commit that may have changed anything, kept %v", keys(c.byOwner))
	}
	third := ownerVectorsLimit / 3
	for owner := range int64(3) {
		e := c.reading(owner)
		e.vecs = make([]byte, third)
		c.put(e)
	}
	c.get(0) // 1 is now the least recently searched
	e := c.reading(3)
	e.vecs = make([]byte, third)
	c.put(e)
	if c.get(1) != nil || c.get(0) == nil || c.get(2) == nil || c.get(3) == nil {
		t.Errorf("after a fourth owner, kept %v; want 0, 2 and 3", keys(c.byOwner))
	}
	if c.size > ownerVectorsLimit {
		t.Errorf("%d bytes kept, over the limit of %d", c.size, ownerVectorsLimit)
	}
	huge := c.reading(9)
	huge.vecs = make([]byte, ownerVectorsLimit+1)
	c.put(huge)
	if c.get(9) != nil || c.get(3) == nil {
		t.Error("an owner's vectors larger than the limit were kept, or pushed the others out")
	}
}

func keys[V any](m map[int64]V) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	return out
}
