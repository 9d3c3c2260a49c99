package pinecone_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/internal/fakepinecone"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/index/pinecone"
	"github.com/hectormem/hector/pkg/session"
)

// fakes makes a store on a fake index of its own per call, or per shared
// label within a test.
func fakes() indextest.StoreFactory {
	var mu sync.Mutex
	shared := map[string]*fakepinecone.Server{}
	return func(t testing.TB, label string) index.Store {
		mu.Lock()
		fake := shared[t.Name()+"/"+label]
		if fake == nil {
			fake = fakepinecone.Start(t, 0)
			if label != "" {
				shared[t.Name()+"/"+label] = fake
			}
		}
		mu.Unlock()
		s, err := pinecone.New(pinecone.Config{Host: fake.URL, APIKey: fake.APIKey})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestStore(t *testing.T) { indextest.RunStore(t, fakes(), "vector") }

// Forgetting a user leaves no vector of theirs in the fake index, read
// directly, and every other vector as it was.
func TestErasure(t *testing.T) {
	fake := fakepinecone.Start(t, 0)
	store, err := pinecone.New(pinecone.Config{Host: fake.URL, APIKey: fake.APIKey})
	if err != nil {
		t.Fatal(err)
	}
	indextest.RunErasure(t, store, "vector", func(testing.TB) []string { return fake.Dump() })
}

// TestRealPinecone runs the same against a real, empty Pinecone index
// (cosine) when HECTOR_TEST_PINECONE_API_KEY and HECTOR_TEST_PINECONE_HOST
// are set. It deletes everything in the index.
func TestRealPinecone(t *testing.T) {
	key, host := os.Getenv("HECTOR_TEST_PINECONE_API_KEY"), os.Getenv("HECTOR_TEST_PINECONE_HOST")
	if key == "" || host == "" {
		t.Skip("opt-in: set HECTOR_TEST_PINECONE_API_KEY and HECTOR_TEST_PINECONE_HOST to run against a real Pinecone")
	}
	indextest.RunStore(t, func(t testing.TB, _ string) index.Store {
		s, err := pinecone.New(pinecone.Config{Host: host, APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Drop(context.Background()) })
		return s
	}, "vector")
}

// What goes over the wire: every data request names the owner's namespace
// (or the store's own record), never another's.
func TestEveryRequestNamesTheOwnersNamespace(t *testing.T) {
	fake := fakepinecone.Start(t, 0)
	store, _ := pinecone.New(pinecone.Config{Host: fake.URL, APIKey: fake.APIKey})
	sessions := session.NewInMemoryService()
	idx := indextest.External(t, "vector", store, 64, index.WithSessions(sessions))
	for _, user := range []string{"alice", "bob"} {
		resp, _ := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: user, SessionID: user + "-s"})
		sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "shared words "+user)})
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.CatchUp(t.Context(), sessions); err != nil {
		t.Fatal(err)
	}
	before := len(fake.Requests())
	got, err := idx.Search(t.Context(), &index.SearchRequest{Query: "shared words", AppName: "app", UserID: "alice"})
	if err != nil || len(got.Results) != 1 || got.Results[0].SessionID != "alice-s" {
		t.Fatalf("alice's search = %+v, %v", got, err)
	}
	if err := sessions.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "alice", SessionID: "alice-s"}); err != nil {
		t.Fatal(err)
	}
	if err := idx.CatchUp(t.Context(), sessions); err != nil { // the deletion, from the change feed
		t.Fatal(err)
	}
	var aliceNS string
	for _, r := range fake.Requests()[before:] {
		switch {
		case r.Namespace == "hector-meta" || r.Path == "/describe_index_stats":
		case aliceNS == "":
			aliceNS = r.Namespace
		case r.Namespace != aliceNS:
			t.Errorf("%s named namespace %q; alice's is %q", r.Path, r.Namespace, aliceNS)
		}
	}
	if aliceNS == "" || !strings.HasPrefix(aliceNS, "g1-") {
		t.Errorf("alice's namespace: %q", aliceNS)
	}
	if ns := fake.Namespaces(); len(ns) != 2 { // bob's and the store's record
		t.Errorf("namespaces after deleting alice's only session: %q", ns)
	}
}

// An index written before vectors carried time_ms (its record has no
// layout) cannot filter by time: searches say to rebuild, and after the
// rebuild a time filter finds the event.
func TestOlderLayoutNeedsARebuild(t *testing.T) {
	fake := fakepinecone.Start(t, 0)
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	resp, _ := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err := sessions.AppendEvent(ctx, resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "the garden")}); err != nil {
		t.Fatal(err)
	}
	newIndex := func() *index.Index {
		store, _ := pinecone.New(pinecone.Config{Host: fake.URL, APIKey: fake.APIKey})
		return indextest.External(t, "vector", store, 64)
	}
	if err := newIndex().Index(ctx, resp.Session); err != nil {
		t.Fatal(err)
	}
	// The record as an older version wrote it.
	var live struct {
		Vectors map[string]struct {
			Values   []float32      `json:"values"`
			Metadata map[string]any `json:"metadata"`
		} `json:"vectors"`
	}
	call(t, fake, http.MethodGet, "/vectors/fetch?ids=live&namespace=hector-meta", nil, &live)
	record := live.Vectors["live"]
	if record.Metadata["layout"] == nil {
		t.Fatalf("the live record %v has no layout", record.Metadata)
	}
	delete(record.Metadata, "layout")
	call(t, fake, http.MethodPost, "/vectors/upsert", map[string]any{"namespace": "hector-meta",
		"vectors": []any{map[string]any{"id": "live", "values": record.Values, "metadata": record.Metadata}}}, nil)

	idx := newIndex()
	since := index.Filter{After: resp.Session.Events().At(0).Timestamp.Add(-time.Minute)}
	req := &index.SearchRequest{Query: "garden", AppName: "app", UserID: "u", Filter: since}
	if _, err := idx.Search(ctx, req); !errors.Is(err, index.ErrNeedsRebuild) || !strings.Contains(err.Error(), "older Hector") {
		t.Fatalf("a search on the older layout = %v, want ErrNeedsRebuild naming the older Hector", err)
	}
	if err := idx.Rebuild(ctx, sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	got, err := idx.Search(ctx, req)
	if err != nil || len(got.Results) != 1 {
		t.Fatalf("a search filtered by time after the rebuild = %+v, %v; want the event", got, err)
	}
}

// call sends one request to the fake's data plane.
func call(t *testing.T, fake *fakepinecone.Server, method, path string, body, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		r = bytes.NewReader(raw)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, fake.URL+path, r)
	req.Header.Set("Api-Key", fake.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

func TestKeywordIsRefused(t *testing.T) {
	fake := fakepinecone.Start(t, 0)
	store, _ := pinecone.New(pinecone.Config{Host: fake.URL, APIKey: fake.APIKey})
	if err := store.Open(t.Context(), index.Schema{Fingerprint: "hector keyword"}); !errors.Is(err, index.ErrInvalidArgument) {
		t.Errorf("Open for a keyword index = %v, want ErrInvalidArgument", err)
	}
}

func TestWrongKeyAndUnreachable(t *testing.T) {
	fake := fakepinecone.Start(t, 0)
	store, _ := pinecone.New(pinecone.Config{Host: fake.URL, APIKey: "wrong-key-0123456789"})
	err := store.Ready(t.Context())
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong-key") {
		t.Errorf("Ready with a wrong key = %v, want a 401 that does not show the key", err)
	}
	s, err := pinecone.New(pinecone.Config{Host: "http://127.0.0.1:1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	indextest.Unreachable(t, s, "pinecone at 127.0.0.1:1")
}

func TestBadConfig(t *testing.T) {
	for _, host := range []string{"", "memory-abc.svc.pinecone.io", "ftp://x"} {
		if _, err := pinecone.New(pinecone.Config{Host: host}); !errors.Is(err, index.ErrInvalidArgument) {
			t.Errorf("New(%q) = %v, want ErrInvalidArgument", host, err)
		}
	}
}
