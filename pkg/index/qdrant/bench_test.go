package qdrant_test

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/hectormem/hector/pkg/index/indextest"
)

// Against a real Qdrant only (HECTOR_TEST_QDRANT_ADDR, host:gRPC port): the
// in-process fake scans every point, so its figures would say nothing.
//
//	HECTOR_TEST_QDRANT_ADDR=localhost:6334 go test -run '^$' -bench . -benchtime 300x ./pkg/index/qdrant
func BenchmarkSearch(b *testing.B) {
	indextest.BenchStore(b, realQdrant(b), "keyword", "vector", "hybrid")
}

func BenchmarkIndexHeap(b *testing.B) {
	indextest.BenchIndexHeap(b, realQdrant(b), "hybrid")
}

func realQdrant(b testing.TB) indextest.StoreFactory {
	addr := os.Getenv("HECTOR_TEST_QDRANT_ADDR")
	if addr == "" {
		b.Skip("opt-in: set HECTOR_TEST_QDRANT_ADDR to run against a real Qdrant")
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		b.Fatal(err)
	}
	return stores(host, port)
}
