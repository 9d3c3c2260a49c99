package pgsearch_test

import (
	"testing"

	"github.com/hectormem/hector/pkg/index/indextest"
)

// Run with a PostgreSQL server (scripts/test's, or HECTOR_TEST_POSTGRES_DSN):
//
//	go test -run '^$' -bench . -benchtime 300x ./pkg/index/pgsearch
func BenchmarkSearch(b *testing.B) {
	indextest.BenchStore(b, stores(database(b)), "keyword")
}

func BenchmarkIndexHeap(b *testing.B) {
	indextest.BenchIndexHeap(b, stores(database(b)), "keyword")
}
