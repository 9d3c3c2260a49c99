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

// Forgetting a user leaves nothing of theirs in Weaviate, read over its
// REST API object by object, tenant by tenant: no object, and no tenant
// named by their hash; every other object as it was.
func TestErasure(t *testing.T) {
	for _, kind := range []index.Kind{"keyword", "hybrid"} {
		t.Run(string(kind), func(t *testing.T) {
			name := fmt.Sprintf("HectorErase%d_%d", os.Getpid(), collections.Add(1))
			s, err := weaviate.New(weaviate.Config{URL: "http://" + server(t), GRPCAddress: os.Getenv("HECTOR_TEST_WEAVIATE_GRPC_ADDR"), Collection: name})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Drop(context.Background()) })
			indextest.RunErasure(t, s, kind, func(t testing.TB) []string { return dumpWeaviate(t, server(t), name) })
		})
	}
}

// dumpWeaviate lists every tenant and every object (with its properties
// and vectors) of the classes of the collection name.
func dumpWeaviate(t testing.TB, addr, name string) []string {
	get := func(path string, out any) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			raw, _ := io.ReadAll(resp.Body)
			t.Fatalf("GET %s: %s %s", path, resp.Status, raw)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	var schema struct{ Classes []struct{ Class string } }
	get("/v1/schema", &schema)
	var out []string
	for _, c := range schema.Classes {
		if !strings.HasPrefix(c.Class, name) {
			continue
		}
		var tenants []struct{ Name string }
		get("/v1/schema/"+c.Class+"/tenants", &tenants)
		for _, tn := range tenants {
			out = append(out, "tenant "+c.Class+" "+tn.Name)
			for after := ""; ; {
				var page struct {
					Objects []map[string]any `json:"objects"`
				}
				get(fmt.Sprintf("/v1/objects?class=%s&tenant=%s&limit=100&include=vector&after=%s", c.Class, tn.Name, after), &page)
				if len(page.Objects) == 0 {
					break
				}
				for _, o := range page.Objects {
					delete(o, "lastUpdateTimeUnix") // when it was last written, not what it holds
					raw, _ := json.Marshal(o)
					out = append(out, "object "+c.Class+" "+tn.Name+" "+string(raw))
					after = fmt.Sprint(o["id"])
				}
			}
		}
	}
	return out
}

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
