package embed

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// DefaultHashDimensions is the hashing embedder's default vector length.
const DefaultHashDimensions = 384

// Hash is the offline default embedder: deterministic feature hashing of
// lowercased words and their character trigrams into a fixed number of
// dimensions, L2-normalised. It needs no network and no model.
//
// It is lexical, not semantic: texts are close when they share words or
// word pieces ("deploy", "deployment"), not when they mean the same thing
// in other words ("car" and "automobile" are unrelated to it). Use a model
// behind OpenAI or Ollama for meaning.
type Hash struct{ dims int }

// NewHash returns a hashing embedder of dims dimensions (0: DefaultHashDimensions).
func NewHash(dims int) (*Hash, error) {
	if dims == 0 {
		dims = DefaultHashDimensions
	}
	if dims < 16 || dims > 8192 {
		return nil, fmt.Errorf("embed: hash dimensions %d is outside 16..8192", dims)
	}
	return &Hash{dims: dims}, nil
}

func (h *Hash) Dimensions() int     { return h.dims }
func (h *Hash) Fingerprint() string { return fmt.Sprintf("hash/v1/%d", h.dims) }

func (h *Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = h.vector(t)
	}
	return out, nil
}

func (h *Hash) vector(text string) []float32 {
	v := make([]float32, h.dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
	for _, w := range words {
		h.add(v, "w:"+w, 1)
		runes := []rune("^" + w + "$")
		for i := 0; i+3 <= len(runes); i++ {
			h.add(v, "g:"+string(runes[i:i+3]), 0.5)
		}
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm > 0 {
		scale := float32(1 / math.Sqrt(norm))
		for i := range v {
			v[i] *= scale
		}
	}
	return v
}

// add hashes a feature to a dimension and a sign; the sign keeps unrelated
// features that share a dimension from adding up.
func (h *Hash) add(v []float32, feature string, weight float32) {
	f := fnv.New64a()
	f.Write([]byte(feature))
	sum := f.Sum64()
	if sum>>63 == 1 {
		weight = -weight
	}
	v[sum%uint64(h.dims)] += weight
}
