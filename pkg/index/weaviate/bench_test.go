package weaviate_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/session"
)

// Run with a Weaviate server (scripts/test's, or HECTOR_TEST_WEAVIATE_ADDR):
//
//	go test -run '^$' -bench . -benchtime 2000x ./pkg/index/weaviate
//
// Each case rebuilds one user's events into a fresh collection
// (rebuild-events/s), then measures that user's searches (p50-ns, p99-ns).
func BenchmarkSearch(b *testing.B) {
	server(b)
	for _, n := range []int{10_000, 100_000} {
		var sessions session.Service
		for _, kind := range []string{"keyword", "vector", "hybrid"} {
			b.Run(fmt.Sprintf("%s/events=%d", kind, n), func(b *testing.B) {
				if sessions == nil {
					sessions = indextest.FillUsers(b, 1, n)
				}
				indextest.BenchSearch(b, external(b, kind), sessions)
			})
		}
	}
}

func external(b testing.TB, kind string) *index.External {
	return indextest.External(b, kind, newStore(b, ""), 384)
}

// BenchmarkIndexHeap: what holding 100,000 events' index costs a replica's
// heap (index-heap-MB), in process and in Weaviate.
func BenchmarkIndexHeap(b *testing.B) {
	server(b)
	sessions := indextest.FillUsers(b, 10, 10_000)
	for _, where := range []string{"in-process", "weaviate"} {
		b.Run("hybrid/"+where, func(b *testing.B) {
			for b.Loop() {
				before := heapInUse()
				var idx index.Service
				if where == "in-process" {
					idx, _ = index.NewHybrid(indextest.Hash(b, 384), index.WithStemming(true))
				} else {
					idx = external(b, "hybrid")
				}
				if err := idx.Rebuild(b.Context(), sessions, "", ""); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(heapInUse()-before)/(1<<20), "index-heap-MB")
				runtime.KeepAlive(idx)
			}
		})
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
