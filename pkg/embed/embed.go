// Package embed turns text into vectors for Hector's vector index: an
// offline hashing embedder, any OpenAI-compatible /v1/embeddings endpoint,
// and Ollama's native embed API.
package embed

import (
	"context"
	"math"
)

// Embedder embeds texts in batches.
type Embedder interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimensions is the length of every vector.
	Dimensions() int
	// Fingerprint names the provider, model and dimensions. Vectors from
	// embedders with different fingerprints must never be compared.
	Fingerprint() string
}

// Asymmetric is an embedder trained to embed a search's queries unlike the
// texts searched (e5 marks them "query: " and "passage: "): Embed embeds
// the texts, EmbedQueries the queries. Wrappers of an embedder pass it on.
type Asymmetric interface {
	EmbedQueries(ctx context.Context, queries []string) ([][]float32, error)
}

// Queries embeds search queries as e was trained to: with EmbedQueries
// where e is Asymmetric, else as any text.
func Queries(ctx context.Context, e Embedder, queries []string) ([][]float32, error) {
	if a, ok := e.(Asymmetric); ok {
		return a.EmbedQueries(ctx, queries)
	}
	return e.Embed(ctx, queries)
}

// Cosine is the cosine similarity of two vectors (0 when either is zero).
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// Floored is an embedder that knows its model's similarity floor: the
// cosine similarity under which a text and a query are unrelated. Each
// model spreads unrelated pairs differently, so the floor is measured per
// model (the built-in ones say how).
type Floored interface {
	SimilarityFloor() float64
}

// SimilarityFloor is e's floor, or 0 for a model whose floor is unknown
// (an API's): then every neighbour counts.
func SimilarityFloor(e Embedder) float64 {
	if f, ok := e.(Floored); ok {
		return f.SimilarityFloor()
	}
	return 0
}

// Weighted is an embedder that knows what share of a hybrid search's
// score its similarity earns, the words' being the rest. A model that
// tells a question's answer from its neighbours better earns more; like
// the floor, it is measured per model.
type Weighted interface {
	VectorWeight() float64
}

// VectorWeight is e's share, or 0 for a model that does not say: the
// index then takes its own default.
func VectorWeight(e Embedder) float64 {
	if w, ok := e.(Weighted); ok {
		return w.VectorWeight()
	}
	return 0
}
