package config

import (
	"os"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/glove"
	"github.com/hectormem/hector/pkg/embed/minilm"
	"github.com/hectormem/hector/pkg/embed/use"
)

// builtinModels are the embedders shipped inside the binary that
// server.index.embedder may name without an embedders entry, and the model
// each name means: "builtin" is the one Hector recommends.
var builtinModels = map[string]string{"builtin": "use-lite", "glove": "glove", "use-lite": "use-lite", "minilm": "minilm"}

// builtinDimensions are the built-in models' vector lengths.
var builtinDimensions = map[string]int{"glove": glove.Dimensions, "use-lite": use.Dimensions, "minilm": minilm.Dimensions}

// fast reports whether the embedder takes microseconds per text, so that an
// append may as well wait for it: hash and the static word vectors, not a
// transformer nor an API (nor an embedder that is not defined).
func (e Embedder) fast() bool {
	return e.Type == "hash" || e.Type == "builtin" && e.Model == "glove"
}

// BuildEmbedder makes the embedder an embedders entry describes.
func BuildEmbedder(e Embedder) (embed.Embedder, error) {
	cfg := embed.HTTPConfig{BaseURL: e.BaseURL, Model: e.Model, APIKey: os.Getenv(e.APIKeyEnv), Dimensions: e.Dimensions, BatchSize: e.BatchSize}
	switch e.Type {
	case "builtin":
		switch e.Model {
		case "use-lite":
			return use.New()
		case "minilm":
			return minilm.New()
		}
		return glove.New()
	case "openai":
		return embed.NewOpenAI(cfg)
	case "ollama":
		return embed.NewOllama(cfg)
	default:
		return embed.NewHash(e.Dimensions)
	}
}
