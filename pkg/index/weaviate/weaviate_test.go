package weaviate_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync/atomic"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/index/weaviate"
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
