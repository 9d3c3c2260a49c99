// Package bert is the forward pass of the built-in BERT encoders (minilm,
// e5): BERT's uncased WordPiece tokenizer, the transformer, and mean
// pooling to a unit vector, as sentence-transformers computes them, over
// weights read from a safetensors file.
package bert

import (
	"context"
	_ "embed"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// Model is one encoder, its weights laid out for this machine's products
// (int8 where mat.Int8). It is safe for concurrent use.
type Model struct {
	tok       *tokenizer
	net       *network
	maxTokens int
	// encoding holds a slot for each pass of the network running, at most
	// one a core. A pass holds its activations (a few MiB for a full
	// batch) until it ends: without a bound, searches arriving faster than
	// the cores encode their queries each held a set at once, and under a
	// soak that outran the machine they took 51 MiB of the heap, growing
	// with the queue. Waiting for a slot costs a pass nothing it would not
	// have waited for its core.
	encoding chan struct{}
	peak     atomic.Int32 // the most passes that ran at once
	running  atomic.Int32
}

// vocab is BERT's uncased WordPiece vocabulary, one piece a line, which
// every model here was trained with (the convert scripts check it).
//
//go:embed vocab.txt
var vocab string

// Load reads a model of the given shape from its safetensors file; it
// reads a text's first maxTokens pieces, [CLS] and [SEP] included.
func Load(weights []byte, shape Shape, maxTokens int) (*Model, error) {
	tensors, err := readSafetensors(weights)
	if err != nil {
		return nil, err
	}
	net, err := newNetwork(tensors, shape)
	if err != nil {
		return nil, err
	}
	if maxTokens > maxPositions {
		return nil, fmt.Errorf("%d pieces is past the model's %d positions", maxTokens, maxPositions)
	}
	return &Model{tok: newTokenizer(strings.Split(strings.TrimRight(vocab, "\n"), "\n")), net: net, maxTokens: maxTokens,
		encoding: make(chan struct{}, runtime.GOMAXPROCS(0))}, nil
}

// Builtin is a model shipped in the binary: load reads it and lays its
// weights out for this machine's products (int8 where mat.Int8), and once
// does the same once per process. name and script say, in an error, which
// model it is and what makes its file.
func Builtin(name, script string, weights []byte, shape Shape, maxTokens int) (load, once func() (*Model, error)) {
	load = func() (*Model, error) {
		m, err := Load(weights, shape, maxTokens)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (%s makes the model file)", name, err, script)
		}
		return m, nil
	}
	return load, sync.OnceValues(load)
}

// Pieces are the vocabulary IDs the model reads of text.
func (m *Model) Pieces(text string) []int { return m.tok.encode(text, m.maxTokens) }

// MostPassesAtOnce is the most passes of the network that have run at
// once: at most one a core.
func (m *Model) MostPassesAtOnce() int { return int(m.peak.Load()) }

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
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	pieces := make([][]int, len(texts))
	for i, text := range texts {
		pieces[i] = m.Pieces(text)
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
			select {
			case m.encoding <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			defer func() { <-m.encoding }()
			running := m.running.Add(1)
			defer m.running.Add(-1)
			for peak := m.peak.Load(); running > peak && !m.peak.CompareAndSwap(peak, running); peak = m.peak.Load() {
			}
			copy(out[start:end], m.net.encode(pieces[start:end]))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
