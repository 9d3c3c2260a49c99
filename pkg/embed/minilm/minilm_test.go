package minilm

import (
	"slices"
	"testing"

	"github.com/hectormem/hector/pkg/embed/embedtest"
	"github.com/hectormem/hector/pkg/embed/internal/bert"
)

func readReference(t *testing.T) embedtest.Reference {
	ref := embedtest.ReadReference(t, Fingerprint, "scripts/models/convert-minilm")
	if len(ref.Texts) < 20 {
		t.Fatalf("the reference has %d texts, want at least 20", len(ref.Texts))
	}
	return ref
}

// The tokenizer cuts every reference text into the pieces the original
// (Hugging Face's fast BERT tokenizer) does: accents, other scripts, CJK,
// emoji, control characters, words over 100 characters, a text past the
// window (cut at MaxTokens).
func TestPiecesMatchTheOriginal(t *testing.T) {
	m, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range readReference(t).Texts {
		if got := m.Pieces(r.Text); !slices.Equal(got, r.Pieces) {
			t.Errorf("%.60q: pieces %v, want %v", r.Text, got, r.Pieces)
		}
	}
}

// Each reference text's vector, computed by sentence-transformers at
// conversion time from the float32 weights, is matched to cosine 0.998
// in float32 from the stored weights (its dense layers rounded to int8
// rows, which cost it 0.999's last step: 0.9985 at worst, where float16
// made 0.9999; e5's reach 0.999), and to 0.99 where the dense layers
// multiply in int8, on each int8 kernel this machine has.
func TestVectorsMatchTheOriginal(t *testing.T) {
	ref := readReference(t)
	embedtest.OnEveryKernel(t, load, func(t *testing.T, m *bert.Model, minimum float64) {
		embedtest.VectorsMatch(t, &Embedder{m}, ref, minimum)
	})
}

// Texts embedded together come out as they do alone.
func TestBatchesMatchSingles(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	embedtest.BatchesMatchSingles(t, e, readReference(t))
}

// A question is nearer the text that answers it than to one that does not.
func TestNearInMeaning(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	embedtest.Near(t, e, []embedtest.Pair{
		{Text: "Do you remember my pets?", Near: "My dog Rex loves the park", Far: "Book a flight to Berlin"},
		{Text: "What does Anna do for a living?", Near: "Anna works as a nurse at the hospital", Far: "Anna bought a red bicycle"},
		{Text: "Where do I keep my old sneakers?", Near: "I keep my old sneakers under my bed", Far: "I bought new running shoes"},
	})
}

// BenchmarkEmbed: texts per second on one core.
//
//	go test -run '^$' -bench Embed -cpu 1 ./pkg/embed/minilm
func BenchmarkEmbed(b *testing.B) {
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	embedtest.Bench(b, e, func(s string) int { return len(e.m.Pieces(s)) }, 16)
}
