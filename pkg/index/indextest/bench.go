package indextest

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
