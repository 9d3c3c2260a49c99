package use

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
		if c := embedtest.Cosine(got[0], r.Vector); c < 0.9999 {
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
		if c := embedtest.Cosine(together[i], embedtest.Wide(alone[0])); c < 0.99999 {
			t.Errorf("%q: cosine %.6f between its vector in a batch and alone", text, c)
		}
	}
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
