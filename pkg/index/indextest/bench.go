package indextest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// vocabulary is the benchmarks' words: the same for every index and store.
var vocabulary = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 5000)
	for i := range words {
		n := 3 + r.IntN(7)
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		words[i] = string(b)
	}
	return words
}()

// Sentence draws words with a skewed distribution, like real text.
func Sentence(r *rand.Rand, n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = vocabulary[int(float64(len(vocabulary))*r.Float64()*r.Float64())]
	}
	return strings.Join(words, " ")
}

// FillUsers stores users × perUser user messages in sessions of 50 events.
func FillUsers(b testing.TB, users, perUser int) session.Service {
	sessions := session.NewInMemoryService()
	r := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	for u := range users {
		var s session.Session
		for i := range perUser {
			if i%50 == 0 {
				resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: fmt.Sprintf("u%d", u)})
				if err != nil {
					b.Fatal(err)
				}
				s = resp.Session
			}
			ev := &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, Sentence(r, 12))}
			if err := sessions.AppendEvent(ctx, s, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	return sessions
}

// BenchSearch rebuilds idx from sessions, reporting the rebuild's
// throughput (events/s), then measures searches of user u0: p50-ns and
// p99-ns are per-search latencies.
func BenchSearch(b *testing.B, idx index.Service, sessions session.Service) {
	var events int
	ctx := index.WithRebuildProgress(context.Background(), func(p index.Progress) { events = p.Events })
	start := time.Now()
	if err := idx.Rebuild(ctx, sessions, "", ""); err != nil {
		b.Fatal(err)
	}
	rate := float64(events) / time.Since(start).Seconds()
	r := rand.New(rand.NewPCG(5, 6))
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = Sentence(r, 4)
	}
	var durations []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		_, err := idx.Search(context.Background(), &index.SearchRequest{Query: queries[i%len(queries)], AppName: "app", UserID: "u0", Limit: 10})
		durations = append(durations, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		i++
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2]), "p50-ns")
	b.ReportMetric(float64(durations[len(durations)*99/100]), "p99-ns")
	b.ReportMetric(rate, "rebuild-events/s") // after the loop, which resets reported metrics
}

// BenchStore measures each kind of index held in stores from newStore, at
// 10,000 and 100,000 events of one user: each case rebuilds the events
// into a fresh collection (rebuild-events/s), then measures that user's
// searches (p50-ns, p99-ns).
func BenchStore(b *testing.B, newStore StoreFactory, kinds ...index.Kind) {
	for _, n := range []int{10_000, 100_000} {
		var sessions session.Service
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("%s/events=%d", kind, n), func(b *testing.B) {
				if sessions == nil {
					sessions = FillUsers(b, 1, n)
				}
				BenchSearch(b, External(b, kind, newStore(b, ""), 384), sessions)
			})
		}
	}
}

// BenchIndexHeap reports what holding 100,000 events' index (10 users)
// costs a replica's heap (index-heap-MB): in process, and in a store from
// newStore.
func BenchIndexHeap(b *testing.B, newStore StoreFactory, kind index.Kind) {
	sessions := FillUsers(b, 10, 10_000)
	for _, where := range []string{"in-process", "store"} {
		b.Run(string(kind)+"/"+where, func(b *testing.B) {
			for b.Loop() {
				before := heapInUse()
				var idx index.Service
				var err error
				switch {
				case where == "store":
					idx = External(b, kind, newStore(b, ""), 384)
				case kind == index.KindKeyword:
					idx, err = index.NewKeyword()
				default:
					idx, err = index.NewHybrid(Hash(b, 384))
				}
				if err != nil {
					b.Fatal(err)
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
