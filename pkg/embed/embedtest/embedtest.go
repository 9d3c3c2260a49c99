// Package embedtest holds what the built-in embedders' tests share: the
// meaning check and the throughput benchmark.
package embedtest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/internal/mat"
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
	// Texts of exactly 16 and 128 pieces: a question, and a long message.
	words := strings.Fields("we finally adopted a puppy from the shelter last weekend and the kids walk him every evening before dinner")
	text := func(pieces int) string {
		var t []string
		for i := 0; tokens(strings.Join(t, " ")) < pieces; i++ {
			t = append(t, words[i%len(words)])
		}
		return strings.Join(t, " ")
	}
	for _, pieces := range []int{16, 128} {
		s := text(pieces)
		for _, n := range []int{1, batch} {
			name := fmt.Sprintf("%dpieces/single", pieces)
			if n > 1 {
				name = fmt.Sprintf("%dpieces/batch", pieces)
			}
			b.Run(name, func(b *testing.B) {
				texts := make([]string, n)
				for i := range texts {
					texts[i] = s
				}
				for b.Loop() {
					if _, err := e.Embed(b.Context(), texts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "texts/s")
			})
		}
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

// Reference is what a built-in model's conversion script computed with
// the original implementation (testdata/reference.json): each text's
// pieces and vector.
type Reference struct {
	Fingerprint string
	Texts       []struct {
		Text   string
		Pieces []int
		Vector []float64
	}
}

// ReadJSON reads a JSON file into v.
func ReadJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// ReadReference reads testdata/reference.json, made for the model named
// by fingerprint (else the model changed: its script must run again).
func ReadReference(t *testing.T, fingerprint, script string) Reference {
	t.Helper()
	var ref Reference
	ReadJSON(t, "testdata/reference.json", &ref)
	if ref.Fingerprint != fingerprint {
		t.Fatalf("the reference was made for %s; this is %s: run %s", ref.Fingerprint, fingerprint, script)
	}
	return ref
}

// OnEveryKernel runs check on a model loaded (by load) for float32
// products and again for int8 products on each int8 kernel this machine
// has (AVX2's, and AVX-512 VNNI's where it is there), with the cosine its
// vectors must reach on each: 0.999 and 0.99. scripts/test runs the suite
// again with HECTOR_KERNELS=portable, for the portable path.
func OnEveryKernel[M any](t *testing.T, load func() (M, error), check func(t *testing.T, m M, minimum float64)) {
	kernels := []string{""} // float32
	if mat.Kernel {
		kernels = append(kernels, mat.Int8Kernels()...)
	}
	for _, kernel := range kernels {
		name, minimum := "int8 on "+kernel, 0.99
		if kernel == "" {
			name, minimum = "float32", 0.999
		}
		t.Run(name, func(t *testing.T) {
			restore := mat.UseInt8(kernel)
			m, err := load()
			restore()
			if err != nil {
				t.Fatal(err)
			}
			check(t, m, minimum)
		})
	}
}

// VectorsMatch checks each reference text's vector from e against the
// original's, to at least cosine minimum.
func VectorsMatch(t *testing.T, e embed.Embedder, ref Reference, minimum float64) {
	t.Helper()
	lowest := 1.0
	defer func() { t.Logf("lowest cosine to the original's vectors: %.6f", lowest) }()
	for _, r := range ref.Texts {
		got, err := e.Embed(t.Context(), []string{r.Text})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || len(got[0]) != len(r.Vector) {
			t.Fatalf("%.60q: %d vectors, want 1 of %d values", r.Text, len(got), len(r.Vector))
		}
		c := Cosine(got[0], r.Vector)
		lowest = min(lowest, c)
		if !(c >= minimum) { // NaN fails too
			t.Errorf("%.60q: cosine %.6f to the original's vector, want ≥ %g", r.Text, c, minimum)
		}
	}
}

// BatchesMatchSingles checks that the reference texts embedded together
// come out as they do alone: a batch shares the dense layers, never
// attention.
func BatchesMatchSingles(t *testing.T, e embed.Embedder, ref Reference) {
	t.Helper()
	var texts []string
	for _, r := range ref.Texts {
		texts = append(texts, r.Text)
	}
	together, err := e.Embed(t.Context(), texts)
	if err != nil || len(together) != len(texts) {
		t.Fatalf("%d vectors, %v", len(together), err)
	}
	for i, text := range texts {
		alone, err := e.Embed(t.Context(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		if c := Cosine(together[i], Wide(alone[0])); !(c >= 0.99999) { // NaN fails too
			t.Errorf("%.60q: cosine %.6f between its vector in a batch and alone", text, c)
		}
	}
}
