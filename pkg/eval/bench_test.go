package eval_test

import (
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/eval"
	"github.com/hectormem/hector/pkg/index"
)

// BenchmarkSearch asks a public benchmark's questions, over and over, of
// the zero configuration's stores loaded with its conversations as
// hector eval loads them: what one search costs the machine, its
// embedding included, with keyword and the default side by side. The
// data is named by HECTOR_BENCH_EVAL (a LoCoMo .zip or .json, or a
// LongMemEval .jsonl.gz); without it the benchmark is skipped. With
// -cpu 2, eight searches run at once, as hector eval --clients 8 asks:
//
//	HECTOR_BENCH_EVAL=locomo-dev.zip go test -run '^$' -bench Search -cpu 2 ./pkg/eval
func BenchmarkSearch(b *testing.B) {
	path := os.Getenv("HECTOR_BENCH_EVAL")
	if path == "" {
		b.Skip("HECTOR_BENCH_EVAL names no benchmark file")
	}
	raw, err := eval.DefaultLimits.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	load := eval.DefaultLimits.LoadLoCoMo
	if strings.Contains(path, "longmemeval") {
		load = eval.DefaultLimits.LoadLongMemEval
	}
	d, err := load(path, raw)
	if err != nil {
		b.Fatal(err)
	}
	for _, kind := range []index.Kind{index.KindKeyword, index.KindHybrid} {
		// Loaded once, outside the timed function, which runs more than once.
		cfg := config.Zero(config.Overrides{DataDir: b.TempDir()})
		cfg.Server.Index.Type = kind
		svcs, err := app.Open(b.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			b.Fatal(err)
		}
		defer svcs.Close()
		// Loading asks every question once; the loop asks them again.
		if _, err := eval.Run(b.Context(), d, svcs.Sessions, svcs.Index, eval.Options{App: "bench"}); err != nil {
			b.Fatal(err)
		}
		b.Run(string(kind), func(b *testing.B) {
			var next atomic.Int64
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				// Labelled, so that a profile (-cpuprofile) can be read for the searches alone: -tagfocus phase=search.
				pprof.SetGoroutineLabels(pprof.WithLabels(b.Context(), pprof.Labels("phase", "search")))
				for pb.Next() {
					q := d.Questions[int(next.Add(1))%len(d.Questions)]
					if _, err := svcs.Index.Search(b.Context(), &index.SearchRequest{Query: q.Text, AppName: "bench", UserID: q.UserID, Limit: 10}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
