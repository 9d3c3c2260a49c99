// Package embed turns text into vectors for Hector's vector index: an
// offline hashing embedder, any OpenAI-compatible /v1/embeddings endpoint,
// and Ollama's native embed API.
package embed

import "context"

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
