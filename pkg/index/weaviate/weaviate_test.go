package weaviate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hectormem/hector/pkg/index"
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

// newStore returns a store on a collection no other test uses (or the
// test's shared one), dropped when the test ends.
func newStore(t testing.TB, shared string) index.Store {
	addr := server(t)
	name := fmt.Sprintf("HectorTest%d_%d", os.Getpid(), collections.Add(1))
	if shared != "" {
		name = fmt.Sprintf("HectorTest%d_%08x", os.Getpid(), crc32.ChecksumIEEE([]byte(t.Name()+"/"+shared)))
	}
	s, err := weaviate.New(weaviate.Config{URL: "http://" + addr, GRPCAddress: os.Getenv("HECTOR_TEST_WEAVIATE_GRPC_ADDR"), Collection: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Drop(context.Background()) })
	return s
}

func TestStore(t *testing.T) { indextest.RunStore(t, newStore, "keyword", "vector", "hybrid") }

func TestUnreachable(t *testing.T) {
	s, err := weaviate.New(weaviate.Config{URL: "http://127.0.0.1:1", Collection: "Nowhere"})
	if err != nil {
		t.Fatal(err)
	}
	indextest.Unreachable(t, s, "weaviate at 127.0.0.1:1")
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []weaviate.Config{{URL: "localhost:8080"}, {URL: "http://h:1", Collection: "lower"}, {URL: "http://h:1", Collection: "Has-Dash"}} {
		if _, err := weaviate.New(cfg); !errors.Is(err, index.ErrInvalidArgument) {
			t.Errorf("New(%+v) = %v, want ErrInvalidArgument", cfg, err)
		}
	}
}

// A collection of the first layout (author, role and time not filterable)
// cannot take searches' filters: searches say to rebuild, and after the
// rebuild a filtered search finds the event.
func TestOlderLayoutNeedsARebuild(t *testing.T) {
	addr := server(t)
	ctx := t.Context()
	name := fmt.Sprintf("HectorTestOld%d", os.Getpid())
	post := func(path string, body any) {
		raw, _ := json.Marshal(body)
		resp, err := http.Post("http://"+addr+path, "application/json", bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(resp.Body)
			t.Fatalf("POST %s: %s %s", path, resp.Status, msg)
		}
	}
	post("/v1/schema", map[string]any{"class": name + "_G1", "description": "Hector search index; documents made by: hector keyword stemmed",
		"vectorizer": "none", "multiTenancyConfig": map[string]any{"enabled": true, "autoTenantCreation": true},
		"properties": []any{map[string]any{"name": "terms", "dataType": []string{"text"}}}})
	post("/v1/aliases", map[string]any{"alias": name, "class": name + "_G1"})
	s, err := weaviate.New(weaviate.Config{URL: "http://" + addr, Collection: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Drop(context.Background()) })

	sessions := session.NewInMemoryService()
	resp, _ := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	for _, who := range []string{"Caroline", "Melanie"} {
		if err := sessions.AppendEvent(ctx, resp.Session, &session.Event{Author: who, Message: session.NewTextMessage(session.RoleUser, "the garden")}); err != nil {
			t.Fatal(err)
		}
	}
	quiet := index.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	idx := indextest.External(t, "keyword", s, 0, quiet)
	req := &index.SearchRequest{Query: "garden", AppName: "app", UserID: "u", Filter: index.Filter{Author: "Melanie"}}
	if _, err := idx.Search(ctx, req); !errors.Is(err, index.ErrNeedsRebuild) || !strings.Contains(err.Error(), "older Hector") {
		t.Fatalf("a search on the first layout = %v, want ErrNeedsRebuild naming the older Hector", err)
	}
	if err := idx.Rebuild(ctx, sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	got, err := idx.Search(ctx, req)
	if err != nil || len(got.Results) != 1 || got.Results[0].Author != "Melanie" {
		t.Fatalf("a filtered search after the rebuild = %+v, %v; want Melanie's event", got, err)
	}
}
