package index_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/glove"
	"github.com/hectormem/hector/pkg/embed/minilm"
	"github.com/hectormem/hector/pkg/embed/use"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/indextest"
	"github.com/hectormem/hector/pkg/session"
)

// Run with: go test -run '^$' -bench . -benchmem ./pkg/index
// p50-ns and p99-ns are per-search latencies; events/s is rebuild throughput.

// BenchmarkKeywordSearch: one user's 10,000 events, in an app holding 100,000.
func BenchmarkKeywordSearch(b *testing.B) {
	idx, _ := index.NewKeyword()
	indextest.BenchSearch(b, idx, indextest.FillUsers(b, 10, 10_000))
}

// BenchmarkKeywordSearchOnDisk: the same, the index kept in a file.
func BenchmarkKeywordSearchOnDisk(b *testing.B) {
	idx, _ := index.NewKeyword(index.WithFile(b.TempDir() + "/index.db"))
	indextest.BenchSearch(b, idx, indextest.FillUsers(b, 10, 10_000))
}

// BenchmarkVectorSearch: one user's 10,000 documents of 384 dimensions.
func BenchmarkVectorSearch(b *testing.B) {
	idx, _ := index.NewVector(hashEmbedder(b, 384))
	indextest.BenchSearch(b, idx, indextest.FillUsers(b, 1, 10_000))
}

func BenchmarkHybridSearch(b *testing.B) {
	idx, _ := index.NewHybrid(hashEmbedder(b, 384))
	indextest.BenchSearch(b, idx, indextest.FillUsers(b, 1, 10_000))
}

// BenchmarkHybridSearchOnDisk: one user's 2,000 documents in a file,
// searched with a context that cannot be cancelled and with one that can,
// as an HTTP request's: the SQLite driver watches the second on a goroutine
// for every row unless the index keeps it from the driver (diskDB.query).
func BenchmarkHybridSearchOnDisk(b *testing.B) {
	sessions := indextest.FillUsers(b, 1, 2_000)
	idx, _ := index.NewHybrid(hashEmbedder(b, 384), index.WithFile(b.TempDir()+"/index.db"), quietLogs)
	if err := idx.Rebuild(context.Background(), sessions, "", ""); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"background", "request"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			if name == "request" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := idx.Search(ctx, &index.SearchRequest{Query: "weather paris trip museum", AppName: "app", UserID: "u0", Limit: 10}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2]), "p50-ns")
		})
	}
}

// BenchmarkKeywordRebuild replays 100,000 events from the session service.
func BenchmarkKeywordRebuild(b *testing.B) {
	sessions := indextest.FillUsers(b, 10, 10_000)
	for b.Loop() {
		idx, _ := index.NewKeyword()
		start := time.Now()
		if err := idx.Rebuild(context.Background(), sessions, "", ""); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(100_000/time.Since(start).Seconds(), "events/s")
	}
}

// BenchmarkIndexOneTurn: storing a turn (a user message and a reply) in a
// session of 1,000 events, then indexing it. The "append_only" case is the
// same without indexing: the difference is what indexing a turn costs. The
// "following" cases index as a server does, following the sessions.
func BenchmarkIndexOneTurn(b *testing.B) {
	for _, kind := range []string{"append_only", "keyword", "vector", "keyword_following", "vector_following", "keyword_on_disk", "keyword_following_on_disk"} {
		b.Run(kind, func(b *testing.B) {
			sessions := session.NewInMemoryService()
			var idx *index.Index
			switch kind {
			case "keyword":
				idx, _ = index.NewKeyword()
			case "vector":
				idx, _ = index.NewVector(hashEmbedder(b, 384))
			case "keyword_following":
				idx, _ = index.NewKeyword(index.WithSessions(sessions))
			case "vector_following":
				idx, _ = index.NewVector(hashEmbedder(b, 384), index.WithSessions(sessions))
			case "keyword_on_disk":
				idx, _ = index.NewKeyword(index.WithFile(b.TempDir() + "/index.db"))
			case "keyword_following_on_disk":
				idx, _ = index.NewKeyword(index.WithFile(b.TempDir()+"/index.db"), index.WithSessions(sessions))
			}
			ctx := context.Background()
			resp, _ := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u"})
			r := rand.New(rand.NewPCG(7, 8))
			for range 1000 {
				sessions.AppendEvent(ctx, resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, indextest.Sentence(r, 12))})
			}
			if idx != nil {
				if err := idx.Index(ctx, resp.Session); err != nil {
					b.Fatal(err)
				}
			}
			turn := []*session.Event{
				{Author: "user", Message: session.NewTextMessage(session.RoleUser, indextest.Sentence(r, 12))},
				{Author: "agent", Message: session.NewTextMessage(session.RoleAssistant, indextest.Sentence(r, 12))},
			}
			for b.Loop() {
				for _, ev := range turn {
					ev.ID = "" // a new event each time
					if err := sessions.AppendEvent(ctx, resp.Session, ev); err != nil {
						b.Fatal(err)
					}
				}
				if idx != nil {
					if err := idx.Index(ctx, resp.Session); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkRebuildWithEmbedders: a hybrid index rebuilt from one user's
// 1,000 events with each offline embedder, in events per second, and the
// heap the embedder's model and the index hold afterwards.
//
//	go test -run '^$' -bench RebuildWithEmbedders -benchtime 1x ./pkg/index
func BenchmarkRebuildWithEmbedders(b *testing.B) {
	sessions := indextest.FillUsers(b, 1, 1000)
	for _, name := range []string{"hash", "glove", "use-lite", "minilm"} {
		b.Run(name, func(b *testing.B) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var e embed.Embedder
			var err error
			switch name {
			case "hash":
				e, err = embed.NewHash(384)
			case "glove":
				e, err = glove.New()
			case "minilm":
				e, err = minilm.New()
			default:
				e, err = use.New()
			}
			if err != nil {
				b.Fatal(err)
			}
			var idx *index.Index
			for b.Loop() {
				idx, _ = index.NewHybrid(e)
				start := time.Now()
				if err := idx.Rebuild(context.Background(), sessions, "", ""); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(1000/time.Since(start).Seconds(), "events/s")
			}
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/(1<<20), "heap-MB")
			runtime.KeepAlive(idx)
		})
	}
}
