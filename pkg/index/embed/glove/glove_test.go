package glove

import (
	"encoding/json"
	"math"
	"os"
	"testing"
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
		if c := cosine(got[i], r.Vector); c < 0.9999 {
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
	for _, tc := range []struct{ text, near, far string }{
		{"car", "automobile", "banana"},
		{"veterinarian", "vet", "airport"},
		{"Do you remember my pets?", "My dog Rex loves the park", "Book a flight to Berlin"},
		{"when is the meeting", "the call is scheduled for Thursday at 3pm", "I like green tea"},
	} {
		v, err := e.Embed(t.Context(), []string{tc.text, tc.near, tc.far})
		if err != nil {
			t.Fatal(err)
		}
		if near, far := cosine(v[0], f64(v[1])), cosine(v[0], f64(v[2])); near <= far {
			t.Errorf("%q: %.3f to %q, not nearer than %.3f to %q", tc.text, near, tc.near, far, tc.far)
		}
	}
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

func cosine(a []float32, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * b[i]
		na += float64(a[i]) * float64(a[i])
		nb += b[i] * b[i]
	}
	return dot / math.Sqrt(na*nb)
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func zero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

func zero64(v []float32) bool { return zero(f64(v)) }

// BenchmarkEmbed: texts per second on one core, short (8 words) and of
// about 100 tokens, one at a time and in batches of 64.
//
//	go test -run '^$' -bench Embed -cpu 1 ./pkg/index/embed/glove
func BenchmarkEmbed(b *testing.B) {
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	short := "Do you remember the name of my dog?"
	long := ""
	for len(Words(long)) < 100 {
		long += "We finally adopted a puppy from the shelter last weekend, and the kids have been walking him every evening. "
	}
	for _, tc := range []struct {
		name  string
		text  string
		batch int
	}{{"short/single", short, 1}, {"short/batch64", short, 64}, {"100tokens/single", long, 1}, {"100tokens/batch64", long, 64}} {
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
