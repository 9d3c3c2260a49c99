package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// OpenAI embeds with any OpenAI-compatible /v1/embeddings endpoint: OpenAI,
// Ollama's OpenAI API, vLLM, LM Studio. BaseURL includes the /v1.
type OpenAI struct{ cfg HTTPConfig }

// NewOpenAI checks cfg and returns the embedder.
func NewOpenAI(cfg HTTPConfig) (*OpenAI, error) {
	if err := cfg.check("openai"); err != nil {
		return nil, err
	}
	return &OpenAI{cfg}, nil
}

func (o *OpenAI) Dimensions() int     { return o.cfg.Dimensions }
func (o *OpenAI) Fingerprint() string { return o.cfg.fingerprint("openai") }

// Embed embeds texts to be searched, after DocumentPrefix.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.embed(ctx, marked(o.cfg.DocumentPrefix, texts))
}

// EmbedQueries embeds search queries, after QueryPrefix.
func (o *OpenAI) EmbedQueries(ctx context.Context, queries []string) ([][]float32, error) {
	return o.embed(ctx, marked(o.cfg.QueryPrefix, queries))
}

func (o *OpenAI) embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.cfg.batches(ctx, texts, func(ctx context.Context, batch []string) ([][]float32, error) {
		var resp struct {
			Data []struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		err := o.cfg.post(ctx, "openai", "/embeddings", map[string]any{"model": o.cfg.Model, "input": batch, "encoding_format": "float"}, &resp, openAIError)
		if err != nil {
			return nil, err
		}
		out := make([][]float32, len(batch))
		for _, d := range resp.Data {
			if d.Index < 0 || d.Index >= len(out) {
				return nil, fmt.Errorf("embed: openai returned a vector for input %d of %d", d.Index, len(out))
			}
			out[d.Index] = d.Embedding
		}
		for i, v := range out {
			if v == nil {
				return nil, fmt.Errorf("embed: openai returned no vector for input %d", i)
			}
		}
		return out, nil
	})
}

func openAIError(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(body[:min(len(body), 300)]))
}
