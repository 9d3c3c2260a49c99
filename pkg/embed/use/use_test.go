package use

import (
	"slices"
	"testing"

	"github.com/hectormem/hector/pkg/embed/embedtest"
)

func readReference(t *testing.T) embedtest.Reference {
	return embedtest.ReadReference(t, Fingerprint, "scripts/models/convert-use")
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
	embedtest.VectorsMatch(t, e, readReference(t), 0.9999)
}

// Texts embedded together come out as they do alone.
func TestBatchesMatchSingles(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	embedtest.BatchesMatchSingles(t, e, readReference(t))
}

// BenchmarkEmbed: texts per second on one core.
//
//	go test -run '^$' -bench Embed -cpu 1 ./pkg/embed/use
func BenchmarkEmbed(b *testing.B) {
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	embedtest.Bench(b, e, func(s string) int { return len(e.m.tok.encode(s)) }, 16)
}

// Sentences that mean alike are near, in other words.
func TestNearInMeaning(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	embedtest.Near(t, e, []embedtest.Pair{
		{Text: "Do you remember my pets?", Near: "My dog Rex loves the park", Far: "Book a flight to Berlin"},
		{Text: "What does Anna do for a living?", Near: "Anna works as a nurse at the hospital", Far: "Anna bought a red bicycle"},
		{Text: "Are there foods she must avoid?", Near: "I'm allergic to peanuts", Far: "I'm reading a novel"},
	})
}
