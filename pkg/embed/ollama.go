package embed

import (
	"context"
	"encoding/json"
	"strings"
)

// Ollama embeds with Ollama's native API (POST /api/embed). BaseURL is the
// server root, such as http://localhost:11434.
type Ollama struct{ cfg HTTPConfig }

// NewOllama checks cfg and returns the embedder.
func NewOllama(cfg HTTPConfig) (*Ollama, error) {
	if err := cfg.check("ollama"); err != nil {
		return nil, err
	}
	return &Ollama{cfg}, nil
}

func (o *Ollama) Dimensions() int     { return o.cfg.Dimensions }
func (o *Ollama) Fingerprint() string { return o.cfg.fingerprint("ollama") }

// Embed embeds texts to be searched, after DocumentPrefix.
func (o *Ollama) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.embed(ctx, marked(o.cfg.DocumentPrefix, texts))
}

// EmbedQueries embeds search queries, after QueryPrefix.
func (o *Ollama) EmbedQueries(ctx context.Context, queries []string) ([][]float32, error) {
	return o.embed(ctx, marked(o.cfg.QueryPrefix, queries))
}

func (o *Ollama) embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.cfg.batches(ctx, texts, func(ctx context.Context, batch []string) ([][]float32, error) {
		var resp struct {
			Embeddings [][]float32 `json:"embeddings"`
		}
		if err := o.cfg.post(ctx, "ollama", "/api/embed", map[string]any{"model": o.cfg.Model, "input": batch}, &resp, ollamaError); err != nil {
			return nil, err
		}
		return resp.Embeddings, nil
	})
}

func ollamaError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(body[:min(len(body), 300)]))
}
