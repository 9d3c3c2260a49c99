package index_test

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/hectormem/hector/internal/fakeqdrant"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/session"
	"github.com/qdrant/go-client/qdrant"
)

var collections atomic.Int64

// qdrantFactory makes indexes on the Qdrant at host:port. Each index gets a
// collection of its own, except that an index reopened on the same snapshot
// file gets the collection it was saved with.
func qdrantFactory(host string, port int, hybrid bool) indextest.Factory {
	return func(t *testing.T, opts ...index.Option) index.Live {
		name := fmt.Sprintf("hector_test_%d_%d", os.Getpid(), collections.Add(1))
		if path := index.SnapshotPathOf(opts...); path != "" {
			name = fmt.Sprintf("hector_test_%x", []byte(path))[:60]
		}
		opts = append(opts, index.WithQdrant(index.QdrantConfig{Host: host, Port: port, Collection: name}))
		var idx *index.Index
		var err error
		if hybrid {
			idx, err = index.NewHybrid(hashEmbedder(t, 64), opts...)
		} else {
			idx, err = index.NewVector(hashEmbedder(t, 64), opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
}

func TestVectorQdrant(t *testing.T) {
	fake := fakeqdrant.Start(t)
	indextest.Run(t, qdrantFactory(fake.Host, fake.Port, false))
}

func TestHybridQdrant(t *testing.T) {
	fake := fakeqdrant.Start(t)
	indextest.Run(t, qdrantFactory(fake.Host, fake.Port, true))
}

// TestQdrantFiltersEveryRequestByAppAndUser checks what goes over the wire:
// payload indexes on the scope fields, and no query or delete without both.
func TestQdrantFiltersEveryRequestByAppAndUser(t *testing.T) {
	fake := fakeqdrant.Start(t)
	idx := qdrantFactory(fake.Host, fake.Port, false)(t)
	sessions := session.NewInMemoryService(session.WithDeleteHook(idx.Clear))
	for _, user := range []string{"alice", "bob"} {
		resp, _ := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: user, SessionID: user + "-s"})
		sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "shared words "+user)})
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := idx.Search(t.Context(), &index.SearchRequest{Query: "shared words", AppName: "app", UserID: "alice"})
	if err != nil || len(rs.Results) != 1 || rs.Results[0].SessionID != "alice-s" {
		t.Fatalf("alice's search = %+v, %v", rs, err)
	}
	if err := sessions.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "bob", SessionID: "bob-s"}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Rebuild(t.Context(), sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	if len(fake.Filters) < 3 {
		t.Fatalf("only %d filtered requests recorded", len(fake.Filters))
	}
	for _, keys := range fake.Filters {
		if !slices.Contains(keys, "app") || !slices.Contains(keys, "user") {
			t.Errorf("a request filtered on %q only", keys)
		}
	}
	coll := fmt.Sprintf("hector_test_%d_%d", os.Getpid(), collections.Load())
	for field, want := range map[string]qdrant.FieldType{"app": qdrant.FieldType_FieldTypeKeyword, "user": qdrant.FieldType_FieldTypeKeyword} {
		if typ, ok := fake.Index(coll, field); !ok || typ != want {
			t.Errorf("payload index on %q: %v %v", field, typ, ok)
		}
	}
	if n := fake.Points(coll); n != 1 {
		t.Errorf("%d points after deleting bob's session and rebuilding, want alice's 1 (old generations dropped)", n)
	}
}

// TestRealQdrant runs the suite against a real Qdrant when
// HECTOR_TEST_QDRANT_ADDR (host:grpc-port) is set.
func TestRealQdrant(t *testing.T) {
	addr := os.Getenv("HECTOR_TEST_QDRANT_ADDR")
	if addr == "" {
		t.Skip("HECTOR_TEST_QDRANT_ADDR is not set")
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	indextest.Run(t, qdrantFactory(host, port, false))
}
