package index_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// Run with: go test -run '^$' -bench . -benchmem ./pkg/index
// p50-ns and p99-ns are per-search latencies; events/s is rebuild throughput.

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

// sentence draws words with a skewed distribution, like real text.
func sentence(r *rand.Rand, n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = vocabulary[int(float64(len(vocabulary))*r.Float64()*r.Float64())]
	}
	return strings.Join(words, " ")
}

// fillUsers stores users × perUser user messages in sessions of 50 events.
func fillUsers(b *testing.B, users, perUser int) session.Service {
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
			ev := &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, sentence(r, 12))}
			if err := sessions.AppendEvent(ctx, s, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	return sessions
}

func benchSearch(b *testing.B, idx *index.Index, sessions session.Service) {
	if err := idx.Rebuild(context.Background(), sessions, "", ""); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = sentence(r, 4)
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
}

// BenchmarkKeywordSearch: one user's 10,000 events, in an app holding 100,000.
func BenchmarkKeywordSearch(b *testing.B) {
	idx, _ := index.NewKeyword(index.WithStemming(true))
	benchSearch(b, idx, fillUsers(b, 10, 10_000))
}

// BenchmarkVectorSearch: one user's 10,000 documents of 384 dimensions.
func BenchmarkVectorSearch(b *testing.B) {
	idx, _ := index.NewVector(hashEmbedder(b, 384))
	benchSearch(b, idx, fillUsers(b, 1, 10_000))
}

func BenchmarkHybridSearch(b *testing.B) {
	idx, _ := index.NewHybrid(hashEmbedder(b, 384), index.WithStemming(true))
	benchSearch(b, idx, fillUsers(b, 1, 10_000))
}

// BenchmarkKeywordRebuild replays 100,000 events from the session service.
func BenchmarkKeywordRebuild(b *testing.B) {
	sessions := fillUsers(b, 10, 10_000)
	for b.Loop() {
		idx, _ := index.NewKeyword(index.WithStemming(true))
		start := time.Now()
		if err := idx.Rebuild(context.Background(), sessions, "", ""); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(100_000/time.Since(start).Seconds(), "events/s")
	}
}

// BenchmarkIndexOneTurn: storing a turn (a user message and a reply) in a
// session of 1,000 events, then indexing it. The "append_only" case is the
// same without indexing: the difference is what indexing a turn costs.
func BenchmarkIndexOneTurn(b *testing.B) {
	for _, kind := range []string{"append_only", "keyword", "vector"} {
		b.Run(kind, func(b *testing.B) {
			var idx *index.Index
			switch kind {
			case "keyword":
				idx, _ = index.NewKeyword()
			case "vector":
				idx, _ = index.NewVector(hashEmbedder(b, 384))
			}
			sessions := session.NewInMemoryService()
			ctx := context.Background()
			resp, _ := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u"})
			r := rand.New(rand.NewPCG(7, 8))
			for range 1000 {
				sessions.AppendEvent(ctx, resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, sentence(r, 12))})
			}
			if idx != nil {
				if err := idx.Index(ctx, resp.Session); err != nil {
					b.Fatal(err)
				}
			}
			turn := []*session.Event{
				{Author: "user", Message: session.NewTextMessage(session.RoleUser, sentence(r, 12))},
				{Author: "agent", Message: session.NewTextMessage(session.RoleAssistant, sentence(r, 12))},
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
