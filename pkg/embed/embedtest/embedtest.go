// Package embedtest holds what the built-in embedders' tests share: the
// meaning check and the throughput benchmark.
package embedtest

import (
	"math"
	"testing"

	"github.com/hectormem/hector/pkg/embed"
)

// Pair is a text, a text that means alike and one that does not.
type Pair struct{ Text, Near, Far string }

// Near checks that each text is nearer in meaning to its Near than to its Far.
func Near(t *testing.T, e embed.Embedder, pairs []Pair) {
	t.Helper()
	for _, p := range pairs {
		v, err := e.Embed(t.Context(), []string{p.Text, p.Near, p.Far})
		if err != nil {
			t.Fatal(err)
		}
		if near, far := Cosine(v[0], Wide(v[1])), Cosine(v[0], Wide(v[2])); near <= far {
			t.Errorf("%q: %.3f to %q, not nearer than %.3f to %q", p.Text, near, p.Near, far, p.Far)
		}
	}
}

// Bench measures texts per second, short (8 words) and of about 100
// tokens (as tokens counts them), one at a time and in batches.
//
//	go test -run '^$' -bench Embed -cpu 1 ./pkg/embed/...
func Bench(b *testing.B, e embed.Embedder, tokens func(string) int, batch int) {
	short := "Do you remember the name of my dog?"
	long := ""
	for tokens(long) < 100 {
		long += "We finally adopted a puppy from the shelter last weekend, and the kids walk him every evening. "
	}
	for _, tc := range []struct {
		name  string
		text  string
		batch int
	}{{"short/single", short, 1}, {"short/batch", short, batch}, {"100tokens/single", long, 1}, {"100tokens/batch", long, batch}} {
		b.Run(tc.name, func(b *testing.B) {
			texts := make([]string, tc.batch)
			for i := range texts {
				texts[i] = tc.text
			}
			for b.Loop() {
				if _, err := e.Embed(b.Context(), texts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*tc.batch)/b.Elapsed().Seconds(), "texts/s")
		})
	}
}

// Cosine is the cosine similarity of a vector and a reference one.
func Cosine(a []float32, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * b[i]
		na += float64(a[i]) * float64(a[i])
		nb += b[i] * b[i]
	}
	return dot / math.Sqrt(na*nb)
}

// Wide is v in float64.
func Wide(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
