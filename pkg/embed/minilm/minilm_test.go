package minilm

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/hectormem/hector/pkg/embed/embedtest"
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
		t.Fatalf("the reference was made for %s; this is %s: run scripts/models/convert-minilm", ref.Fingerprint, Fingerprint)
	}
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
		if got := m.tok.encode(r.Text, MaxTokens); !slices.Equal(got, r.Pieces) {
			t.Errorf("%.60q: pieces %v, want %v", r.Text, got, r.Pieces)
		}
	}
}

// Each reference text's vector, computed by sentence-transformers at
// conversion time from the float32 weights, is matched to cosine 0.999
// by the float16 weights in Go.
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
		if c := embedtest.Cosine(got[0], r.Vector); c < 0.999 {
			t.Errorf("%.60q: cosine %.6f to the original's vector, want ≥ 0.999", r.Text, c)
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
		if c := embedtest.Cosine(together[i], embedtest.Wide(alone[0])); c < 0.99999 {
			t.Errorf("%.60q: cosine %.6f between its vector in a batch and alone", text, c)
		}
	}
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
	embedtest.Bench(b, e, func(s string) int { return len(e.m.tok.encode(s, MaxTokens)) }, 16)
}
