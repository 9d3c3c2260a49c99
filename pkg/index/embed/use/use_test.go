package use

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

type reference struct {
	Fingerprint string
	Texts       []struct {
		Text   string
		Pieces []int
		Vector []float64
	}
}

func readReference(t *testing.T) reference {
	raw, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if ref.Fingerprint != Fingerprint {
		t.Fatalf("the reference was made for %s; this is %s: run scripts/models/convert-use", ref.Fingerprint, Fingerprint)
	}
	return ref
}

// The tokenizer splits every reference text into the pieces the TF.js
// original does: other scripts, emoji, NFKC forms, unknown symbols.
func TestPiecesMatchTheOriginal(t *testing.T) {
	m, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range readReference(t).Texts {
		if got := m.tok.encode(r.Text); !slices.Equal(got, r.Pieces) && !(len(got) == 0 && len(r.Pieces) == 0) {
			t.Errorf("%q: pieces %v, want %v", r.Text, got, r.Pieces)
		}
	}
}

// Each reference text's vector, computed by the TF.js original at
// conversion time, is matched to cosine 0.9999.
func TestVectorsMatchTheOriginal(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range readReference(t).Texts {
		got, err := e.Embed(t.Context(), []string{r.Text})
		if err != nil {
			t.Fatal(err)
		}
		if c := cosine(got[0], r.Vector); c < 0.9999 {
			t.Errorf("%q: cosine %.6f to the original's vector, want ≥ 0.9999", r.Text, c)
		}
	}
}

// Texts embedded together come out as they do alone: a batch shares the
// dense layers, never attention.
func TestBatchesMatchSingles(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range readReference(t).Texts {
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
		wide := make([]float64, len(alone[0]))
		for j, v := range alone[0] {
			wide[j] = float64(v)
		}
		if c := cosine(together[i], wide); c < 0.99999 {
			t.Errorf("%q: cosine %.6f between its vector in a batch and alone", text, c)
		}
	}
}

func cosine(a []float32, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * b[i]
		na += float64(a[i]) * float64(a[i])
		nb += b[i] * b[i]
	}
	return dot / math.Sqrt(na*nb)
}

// BenchmarkEmbed: texts per second on one core, short (8 words) and of
// about 100 pieces, one at a time and in batches of 16.
//
//	go test -run '^$' -bench Embed -cpu 1 ./pkg/index/embed/use
func BenchmarkEmbed(b *testing.B) {
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	short := "Do you remember the name of my dog?"
	long := ""
	for len(e.m.tok.encode(long)) < 100 {
		long += "We finally adopted a puppy from the shelter last weekend, and the kids walk him every evening. "
	}
	for _, tc := range []struct {
		name  string
		text  string
		batch int
	}{{"short/single", short, 1}, {"short/batch16", short, 16}, {"100pieces/single", long, 1}, {"100pieces/batch16", long, 16}} {
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

// Sentences that mean alike are near, in other words.
func TestNearInMeaning(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ text, near, far string }{
		{"Do you remember my pets?", "My dog Rex loves the park", "Book a flight to Berlin"},
		{"What does Anna do for a living?", "Anna works as a nurse at the hospital", "Anna bought a red bicycle"},
		{"Are there foods she must avoid?", "I'm allergic to peanuts", "I'm reading a novel"},
	} {
		v, err := e.Embed(t.Context(), []string{tc.text, tc.near, tc.far})
		if err != nil {
			t.Fatal(err)
		}
		wide := func(x []float32) []float64 {
			out := make([]float64, len(x))
			for i, f := range x {
				out[i] = float64(f)
			}
			return out
		}
		if near, far := cosine(v[0], wide(v[1])), cosine(v[0], wide(v[2])); near <= far {
			t.Errorf("%q: %.3f to %q, not nearer than %.3f to %q", tc.text, near, tc.near, far, tc.far)
		}
	}
}
