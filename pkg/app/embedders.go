package app

import (
	"os"

	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/e5"
	"github.com/hectormem/hector/pkg/embed/glove"
	"github.com/hectormem/hector/pkg/embed/minilm"
	"github.com/hectormem/hector/pkg/embed/use"
)

// BuildEmbedder makes the embedder an embedders entry describes.
func BuildEmbedder(e config.Embedder) (embed.Embedder, error) {
	cfg := embed.HTTPConfig{BaseURL: e.BaseURL, Model: e.Model, APIKey: os.Getenv(e.APIKeyEnv), Dimensions: e.Dimensions, BatchSize: e.BatchSize,
		QueryPrefix: e.QueryPrefix, DocumentPrefix: e.DocumentPrefix}
	switch e.Type {
	case "builtin":
		switch e.Model {
		case "use-lite":
			return use.New()
		case "minilm":
			return minilm.New()
		case "e5-small":
			return e5.New()
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
