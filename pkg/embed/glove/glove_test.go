package glove

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/hectormem/hector/pkg/embed/embedtest"
)

// The built-in table embeds as the unquantised table the converter read:
// each reference text's vector, computed from GloVe's own numbers at
// conversion time, is matched to cosine 0.9999.
func TestMatchesTheUnquantisedTable(t *testing.T) {
	raw, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Fingerprint string
		Texts       []struct {
			Text   string
			Vector []float64
		}
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if ref.Fingerprint != Fingerprint {
		t.Fatalf("the reference was made for %s; this is %s: run scripts/models/convert-glove", ref.Fingerprint, Fingerprint)
	}
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(ref.Texts))
	for i, r := range ref.Texts {
		texts[i] = r.Text
	}
	got, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ref.Texts {
		if len(got[i]) != Dimensions {
			t.Fatalf("%q: %d dimensions", r.Text, len(got[i]))
		}
		if zero(r.Vector) {
			if !zero64(got[i]) {
				t.Errorf("%q has no known word, yet a vector", r.Text)
			}
			continue
		}
		if c := embedtest.Cosine(got[i], r.Vector); c < 0.9999 {
			t.Errorf("%q: cosine %.6f to the reference, want ≥ 0.9999", r.Text, c)
		}
	}
}

// Words that mean alike are near, whatever their letters: what the hash
// embedder cannot do.
func TestNearInMeaning(t *testing.T) {
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	embedtest.Near(t, e, []embedtest.Pair{
		{Text: "car", Near: "automobile", Far: "banana"},
		{Text: "veterinarian", Near: "vet", Far: "airport"},
		{Text: "Do you remember my pets?", Near: "My dog Rex loves the park", Far: "Book a flight to Berlin"},
		{Text: "when is the meeting", Near: "the call is scheduled for Thursday at 3pm", Far: "I like green tea"},
	})
}

func TestWords(t *testing.T) {
	for text, want := range map[string][]string{
		"I don't know":           {"i", "do", "n't", "know"},
		"It’s Rex's ball":        {"it", "'s", "rex", "'s", "ball"},
		"a second-hand car.":     {"a", "second-hand", "car"},
		"--'quoted'-- 42 times!": {"quoted", "42", "times"},
		"":                       nil,
	} {
		got := Words(text)
		if len(got) != len(want) {
			t.Errorf("Words(%q) = %q, want %q", text, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("Words(%q) = %q, want %q", text, got, want)
				break
			}
		}
	}
}

func TestReadTableRefusesDamage(t *testing.T) {
	for name, raw := range map[string][]byte{
		"empty":     nil,
		"not one":   []byte("PK\x03\x04 a zip file"),
		"cut short": tableFile[:len(tableFile)/2],
	} {
		if _, err := ReadTable(raw); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}

func FuzzWords(f *testing.F) {
	f.Add("I don't know, it's a second-hand car’s")
	f.Add("\xff\xfe'''---n't")
	f.Fuzz(func(t *testing.T, text string) {
		for _, w := range Words(text) {
			if w == "" {
				t.Fatalf("Words(%q) has an empty word", text)
			}
		}
		tab, err := builtin()
		if err != nil {
			t.Fatal(err)
		}
		v := tab.Vector(text)
		var norm float64
		for _, x := range v {
			if math.IsNaN(float64(x)) {
				t.Fatalf("Vector(%q) holds NaN", text)
			}
			norm += float64(x) * float64(x)
		}
		if norm != 0 && math.Abs(norm-1) > 1e-4 {
			t.Fatalf("Vector(%q) has length %v", text, math.Sqrt(norm))
		}
	})
}

func zero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

func zero64(v []float32) bool { return zero(embedtest.Wide(v)) }

// BenchmarkEmbed: texts per second on one core.
//
//	go test -run '^$' -bench Embed -cpu 1 ./pkg/embed/glove
func BenchmarkEmbed(b *testing.B) {
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	embedtest.Bench(b, e, func(s string) int { return len(Words(s)) }, 64)
}
