package workingmemory

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Run with: go test -run '^$' -bench . -benchmem ./pkg/workingmemory

func BenchmarkTokenWindow10000(b *testing.B) {
	events := conversation(rand.New(rand.NewPCG(1, 2)), 4000)[:10_000]
	cfg := Config{Type: "token_window", MaxTokens: 4000}
	b.Run("cold", func(b *testing.B) { // a new strategy each time: nothing counted yet
		for b.Loop() {
			s, _ := New(cfg, WithLogger(quiet))
			s.FilterEvents(events)
		}
	})
	b.Run("warm", func(b *testing.B) {
		s, _ := New(cfg, WithLogger(quiet))
		s.FilterEvents(events)
		for b.Loop() {
			s.FilterEvents(events)
		}
	})
}

func BenchmarkCountTokens(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog; Konflux deploys build 4.2.1 to kappa-3 at 09:00. ", 100)
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		b.Run(enc, func(b *testing.B) {
			c, err := NewCounter(enc)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				c.Text(text)
			}
		})
	}
}
