package index

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/session"
)

// Forgetting a user of an in-process index takes them out of the
// snapshot on disk at once, read back from the file itself: not one byte
// of the file names them or holds their words, and every other owner's
// part is as it was, byte for byte. A crash after the erasure therefore
// cannot bring them back.
func TestForgetLeavesNothingInTheSnapshot(t *testing.T) {
	for _, vectors := range []string{"flat", "chromem"} {
		t.Run(vectors, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hybrid.snapshot")
			h, err := embed.NewHash(64)
			if err != nil {
				t.Fatal(err)
			}
			open := func() *Index {
				opts := []Option{WithSnapshot(path)}
				if vectors == "chromem" {
					opts = append(opts, WithChromem())
				}
				return readyHybrid(t, h, opts...)
			}
			idx := open()
			indexErinAndFrank(t, idx)
			if err := idx.Close(); err != nil { // the snapshot as a previous run left it
				t.Fatal(err)
			}
			frankBefore := ownerPart(t, path, "frank")
			if raw, _ := os.ReadFile(path); !bytes.Contains(raw, []byte("erin-canary")) {
				t.Fatal("the snapshot does not hold erin's words before: the scan sees nothing")
			}

			idx = open()
			defer idx.Close()
			if n, err := idx.Forget(t.Context(), "app", "erin"); err != nil || n != 3 {
				t.Fatalf("Forget = %d, %v; want erin's 3 documents", n, err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, trace := range []string{"erin", (Owner{"app", "erin"}).Key()[:16]} {
				if bytes.Contains(raw, []byte(trace)) {
					t.Errorf("the snapshot on disk holds %q after forgetting erin", trace)
				}
			}
			got := ownerPart(t, path, "frank")
			if !reflect.DeepEqual(got.Keyword, frankBefore.Keyword) || !maps.Equal(vectorDocs(t, got.Vectors), vectorDocs(t, frankBefore.Vectors)) {
				t.Error("frank's part of the snapshot changed")
			}
			if !strings.Contains(string(raw), "frank-canary") {
				t.Error("frank's words are not in the snapshot")
			}
		})
	}
}

// readyHybrid opens a hybrid index and waits until its store answers.
func readyHybrid(t *testing.T, e embed.Embedder, opts ...Option) *Index {
	idx, err := NewHybrid(e, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	return idx
}

// indexErinAndFrank indexes a session of three turns for each of erin and
// frank, each turn naming its user and holding a canary.
func indexErinAndFrank(t *testing.T, idx *Index) {
	sessions := session.NewInMemoryService()
	for _, user := range []string{"erin", "frank"} {
		resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: user, SessionID: user + "-s"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			text := canaryText(user, i)
			if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: user, Message: session.NewTextMessage(session.RoleUser, text)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
	}
}

// canaryText is the user's i-th text: the last is long enough for a file
// to keep it compressed (packText).
func canaryText(user string, i int) string {
	text := fmt.Sprintf("%s remembers the %s-canary-%d by the river", user, user, i)
	if i == 2 {
		text += strings.Repeat(", and the water runs past the old mill", 4)
	}
	return text
}

// vectorDocs is what a shard's exported vectors hold, by document: the
// flat store's export as it is, chromem-go's (whose export follows a
// map's order) read back document by document.
func vectorDocs(t *testing.T, payload []byte) map[string]string {
	t.Helper()
	sh, err := chromemStore{}.restore(payload)
	if err != nil {
		return map[string]string{"flat": string(payload)}
	}
	c := sh.(*chromemShard)
	out := map[string]string{}
	for k := range c.ids {
		d, err := c.c.GetByID(t.Context(), k.session+"\x00"+k.event)
		if err != nil {
			t.Fatal(err)
		}
		out[d.ID] = fmt.Sprint(d.Content, d.Metadata, d.Embedding)
	}
	return out
}

// ownerPart is one owner's part of the snapshot at path.
func ownerPart(t *testing.T, path, user string) ownerSnapshot {
	t.Helper()
	s, err := (&snapshotFile{path: path}).read()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range s.Owners {
		if o.User == user {
			// Terms are exported in a map's order: put them in one.
			k := &o.Keyword
			order := make([]int, len(k.Terms))
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(a, b int) int { return strings.Compare(k.Terms[a], k.Terms[b]) })
			terms, postings := make([]string, len(order)), make([][][2]int32, len(order))
			for i, j := range order {
				terms[i], postings[i] = k.Terms[j], k.Postings[j]
			}
			k.Terms, k.Postings = terms, postings
			return o
		}
	}
	t.Fatalf("the snapshot has no part for %s", user)
	return ownerSnapshot{}
}

// The same for an index kept in a file: deleted rows are overwritten, and
// the journal is folded into the file at once, so neither holds a trace.
func TestForgetLeavesNothingInTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hybrid.db")
	h, err := embed.NewHash(64)
	if err != nil {
		t.Fatal(err)
	}
	open := func() *Index { return readyHybrid(t, h, WithFile(path)) }
	idx := open()
	indexErinAndFrank(t, idx)
	files := func() []byte {
		var all []byte
		for _, suffix := range []string{"", "-wal"} {
			raw, err := os.ReadFile(path + suffix)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			all = append(all, raw...)
		}
		return all
	}
	if err := idx.Close(); err != nil { // what was written in memory is in the file now
		t.Fatal(err)
	}
	idx = open()
	defer idx.Close()
	compressed, ok := packText(canaryText("erin", 2)).([]byte)
	if !ok {
		t.Fatal("erin's long text is not compressed")
	}
	if raw := files(); !bytes.Contains(raw, []byte("erin-canary")) || !bytes.Contains(raw, compressed) {
		t.Fatal("the file does not hold erin's words, plain and compressed, before: the scan sees nothing")
	}
	frankBefore, err := idx.Search(t.Context(), &SearchRequest{Query: "river canary", AppName: "app", UserID: "frank"})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := idx.Forget(t.Context(), "app", "erin"); err != nil || n != 3 {
		t.Fatalf("Forget = %d, %v; want erin's 3 documents", n, err)
	}
	if raw := files(); bytes.Contains(raw, []byte("erin")) || bytes.Contains(raw, compressed) {
		t.Error("the file or its journal holds erin's name or words after forgetting her")
	}
	frank, err := idx.Search(t.Context(), &SearchRequest{Query: "river canary", AppName: "app", UserID: "frank"})
	if err != nil || !reflect.DeepEqual(frank, frankBefore) || len(frank.Results) != 3 {
		t.Errorf("frank's search after forgetting erin: %+v, %v; want as before, 3 results", frank, err)
	}
}
