package extract_test

import (
	"fmt"
	"testing"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/extract"
)

// BenchmarkBatching: model calls and tokens (as the requests and answers
// count them, four characters a token: the fake reports no usage) to read
// 100 turns, one turn per call against ten.
//
//	go test -run '^$' -bench Batching -benchtime 1x ./pkg/extract
func BenchmarkBatching(b *testing.B) {
	for _, every := range []int{1, 4, 10} {
		b.Run(fmt.Sprintf("every_turns=%d", every), func(b *testing.B) {
			for b.Loop() {
				script := make([]fakellm.Reply, 100)
				for i := range script {
					script[i] = fakellm.Reply{Content: `{"facts": []}`}
				}
				f := newFixture(b, nil, extract.Budget{}, nil, script...)
				go func() { // the fake tells of each request; nobody here waits for them
					for range f.model.Started {
					}
				}()
				calls, tokens := 0, 0
				var after int64
				for turn := 1; turn <= 100; turn++ {
					f.say(b, fmt.Sprintf("Turn %d: we talked about the garden plans and what to plant by the fence in spring", turn),
						"That sounds like a good plan for the garden; I will remember it.")
					if turn%every != 0 {
						continue
					}
					res, err := f.x.Extract(b.Context(), extract.Request{AppName: "app", UserID: "alice", SessionID: "s", AfterSeq: after})
					if err != nil {
						b.Fatal(err)
					}
					calls, tokens, after = calls+res.Calls, tokens+res.Tokens, res.ToSeq
				}
				b.ReportMetric(float64(calls), "calls/100turns")
				b.ReportMetric(float64(tokens), "tokens/100turns")
			}
		})
	}
}
