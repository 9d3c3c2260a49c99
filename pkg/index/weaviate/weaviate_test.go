package weaviate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/embed"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/index/weaviate"
	"github.com/hectormem/hector/pkg/session"
)

// The tests run against a real Weaviate server: scripts/test starts one
// and sets HECTOR_TEST_WEAVIATE_ADDR (host:port of its REST API).
func server(t testing.TB) string {
	addr := os.Getenv("HECTOR_TEST_WEAVIATE_ADDR")
	if addr == "" {
		t.Skip("HECTOR_TEST_WEAVIATE_ADDR is not set: run scripts/test, which starts a Weaviate server")
	}
	return addr
}

var collections atomic.Int64

// newStore returns a store on a collection no other test uses, dropped
// when the test ends.
func newStore(t testing.TB, name string) *weaviate.Store {
	addr := server(t)
	if name == "" {
		name = fmt.Sprintf("HectorTest%d_%d", os.Getpid(), collections.Add(1))
	}
	s, err := weaviate.New(weaviate.Config{URL: "http://" + addr, GRPCAddress: os.Getenv("HECTOR_TEST_WEAVIATE_GRPC_ADDR"), Collection: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Drop(context.Background()) })
	return s
}

func hash(t testing.TB, dims int) embed.Embedder {
	h, err := embed.NewHash(dims)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func factory(kind string) indextest.Factory {
	return func(t *testing.T, opts ...index.Option) index.Live {
		var e embed.Embedder
		if kind != "keyword" {
			e = hash(t, 64)
		}
		idx, err := index.NewExternal(kind, newStore(t, ""), e, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := idx.Ready(t.Context()); err != nil {
			t.Fatal(err)
		}
		return idx
	}
}

func TestKeyword(t *testing.T) { indextest.Run(t, factory("keyword")) }
func TestVector(t *testing.T)  { indextest.Run(t, factory("vector")) }
func TestHybrid(t *testing.T)  { indextest.Run(t, factory("hybrid")) }

// A replica that starts on a collection others filled sees what they wrote:
// the process keeps nothing.
func TestReplicasShareTheStore(t *testing.T) {
	name := fmt.Sprintf("HectorShared%d", os.Getpid())
	sessions := session.NewInMemoryService()
	one, err := index.NewExternal("hybrid", newStore(t, name), hash(t, 64), nil, index.WithSessions(sessions))
	if err != nil {
		t.Fatal(err)
	}
	two, err := index.NewExternal("hybrid", newStore(t, name), hash(t, 64), nil, index.WithSessions(sessions))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "the zeppelin leaves at noon")}); err != nil {
		t.Fatal(err)
	}
	if err := one.Index(t.Context(), resp.Session); err != nil {
		t.Fatal(err)
	}
	got, err := two.Search(t.Context(), &index.SearchRequest{Query: "zeppelin", AppName: "app", UserID: "u"})
	if err != nil || len(got.Results) != 1 || got.Results[0].Content != "the zeppelin leaves at noon" {
		t.Fatalf("the second replica found %+v, %v; want the event the first indexed", got, err)
	}
	// Indexing through the second replica finds nothing missing: no duplicate.
	if err := two.Index(t.Context(), resp.Session); err != nil {
		t.Fatal(err)
	}
	if got, _ := one.Search(t.Context(), &index.SearchRequest{Query: "zeppelin noon", AppName: "app", UserID: "u"}); len(got.Results) != 1 {
		t.Errorf("after indexing through both replicas: %d results, want 1", len(got.Results))
	}
	// Deleting through one clears it for both.
	if err := sessions.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := two.Search(t.Context(), &index.SearchRequest{Query: "zeppelin", AppName: "app", UserID: "u"}); len(got.Results) != 0 {
		t.Errorf("a deleted session is still found: %+v", got.Results)
	}
}

// A collection built by another embedder is refused until a rebuild.
func TestAnotherEmbedderNeedsARebuild(t *testing.T) {
	name := fmt.Sprintf("HectorFingerprint%d", os.Getpid())
	sessions := session.NewInMemoryService()
	if _, err := index.NewExternal("vector", newStore(t, name), hash(t, 64), nil); err != nil {
		t.Fatal(err)
	}
	quiet := index.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	other, err := index.NewExternal("vector", newStore(t, name), hash(t, 32), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Search(t.Context(), &index.SearchRequest{Query: "x", AppName: "app", UserID: "u"})
	if !errors.Is(err, index.ErrNeedsRebuild) || !strings.Contains(err.Error(), "hector index rebuild") {
		t.Fatalf("search on a collection of another embedder: %v, want one saying to rebuild", err)
	}
	if err := other.Rebuild(t.Context(), sessions, "app", "u"); !errors.Is(err, index.ErrNeedsRebuild) {
		t.Errorf("a scoped rebuild of a stale collection: %v, want ErrNeedsRebuild", err)
	}
	// Another replica with the new embedder waits for the rebuild too.
	replica, err := index.NewExternal("vector", newStore(t, name), hash(t, 32), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Rebuild(t.Context(), sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Search(t.Context(), &index.SearchRequest{Query: "x", AppName: "app", UserID: "u"}); err != nil {
		t.Errorf("after a full rebuild: %v", err)
	}
	if _, err := replica.Search(t.Context(), &index.SearchRequest{Query: "x", AppName: "app", UserID: "u"}); err != nil {
		t.Errorf("after another process rebuilt the collection, a replica still refuses: %v", err)
	}
}

// Rebuilding one user rewrites its documents and removes those the
// sessions no longer hold, and touches no other user's.
func TestScopedRebuildRemovesStaleDocuments(t *testing.T) {
	store := newStore(t, "")
	sessions := session.NewInMemoryService()
	idx, err := index.NewExternal("keyword", store, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "a kept narwhal")}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Index(t.Context(), resp.Session); err != nil {
		t.Fatal(err)
	}
	// Documents of a session the sessions do not hold, for u and for v.
	for _, user := range []string{"u", "v"} {
		stray := index.StoredDoc{Document: index.Document{SessionID: "gone", EventID: "e1", Text: "a stray narwhal"}, Terms: []string{"a", "stray", "narwhal"}}
		if err := store.Write(t.Context(), index.Owner{App: "app", User: user}, []index.StoredDoc{stray}); err != nil {
			t.Fatal(err)
		}
	}
	found := func(user string) []string {
		got, err := idx.Search(t.Context(), &index.SearchRequest{Query: "narwhal", AppName: "app", UserID: user})
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, r := range got.Results {
			texts = append(texts, r.Content)
		}
		return texts
	}
	if got := found("u"); len(got) != 2 {
		t.Fatalf("before the rebuild u finds %q, want the kept and the stray document", got)
	}
	if err := idx.Rebuild(t.Context(), sessions, "app", "u"); err != nil {
		t.Fatal(err)
	}
	if got := found("u"); len(got) != 1 || got[0] != "a kept narwhal" {
		t.Errorf("after rebuilding u, u finds %q, want only the kept document", got)
	}
	if got := found("v"); len(got) != 1 {
		t.Errorf("rebuilding u changed v's documents: v finds %q", got)
	}
}

func TestUnreachable(t *testing.T) {
	s, err := weaviate.New(weaviate.Config{URL: "http://127.0.0.1:1", Collection: "Nowhere"})
	if err != nil {
		t.Fatal(err)
	}
	quiet := index.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	idx, err := index.NewExternal("keyword", s, nil, nil, quiet)
	if err != nil {
		t.Fatalf("an unreachable store at start-up must not fail: %v", err)
	}
	err = idx.Ready(t.Context())
	if !errors.Is(err, index.ErrStoreUnavailable) || !strings.Contains(err.Error(), "weaviate at 127.0.0.1:1") {
		t.Errorf("Ready = %v, want an error naming the store and its address", err)
	}
	if _, err := idx.Search(t.Context(), &index.SearchRequest{Query: "x", AppName: "a", UserID: "u"}); !errors.Is(err, index.ErrStoreUnavailable) {
		t.Errorf("Search = %v, want ErrStoreUnavailable", err)
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []weaviate.Config{{URL: "localhost:8080"}, {URL: "http://h:1", Collection: "lower"}, {URL: "http://h:1", Collection: "Has-Dash"}} {
		if _, err := weaviate.New(cfg); !errors.Is(err, index.ErrInvalidArgument) {
			t.Errorf("New(%+v) = %v, want ErrInvalidArgument", cfg, err)
		}
	}
}

// Each index type retrieves on Weaviate within 0.05 of the same type in
// process. go test -run TestRetrievalQuality -v prints the figures.
func TestRetrievalQuality(t *testing.T) {
	server(t)
	for _, kind := range []string{"keyword", "vector", "hybrid"} {
		var inProcess *index.Index
		var err error
		e := hash(t, 0)
		switch kind {
		case "keyword":
			e = nil
			inProcess, err = index.NewKeyword(index.WithStemming(true))
		case "vector":
			inProcess, err = index.NewVector(e)
		default:
			inProcess, err = index.NewHybrid(e, index.WithStemming(true))
		}
		if err != nil {
			t.Fatal(err)
		}
		external, err := index.NewExternal(kind, newStore(t, ""), e, nil, index.WithStemming(kind != "vector"))
		if err != nil {
			t.Fatal(err)
		}
		want, got := indextest.Retrieval(t, inProcess), indextest.Retrieval(t, external)
		t.Logf("%-8s weaviate %s   in process %s", kind, got, want)
		if got.Recall5 < want.Recall5-0.05 || got.MRR < want.MRR-0.05 {
			t.Errorf("%s on Weaviate: %s, more than 0.05 below in process (%s)", kind, got, want)
		}
	}
}
