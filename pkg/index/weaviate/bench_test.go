package weaviate_test

import (
	"testing"

	"github.com/hectormem/hector/pkg/index/indextest"
)

// Run with a Weaviate server (scripts/test's, or HECTOR_TEST_WEAVIATE_ADDR):
//
//	go test -run '^$' -bench . -benchtime 300x ./pkg/index/weaviate
func BenchmarkSearch(b *testing.B) {
	server(b)
	indextest.BenchStore(b, newStore, "keyword", "vector", "hybrid")
}

func BenchmarkIndexHeap(b *testing.B) {
	server(b)
	indextest.BenchIndexHeap(b, newStore, "hybrid")
}
