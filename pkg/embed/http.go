package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/hectormem/hector/internal/retry"
	"io"
	"net/http"
	"strings"
	"time"
)

// HTTPConfig is what the HTTP embedders share.
type HTTPConfig struct {
	// BaseURL is the API root, such as https://api.openai.com/v1 or http://localhost:11434.
	BaseURL string
	Model   string
	// APIKey is sent as a bearer token. Read it from the environment; it
	// never appears in an error or a log line.
	APIKey string
	// Dimensions is the length of the model's vectors.
	Dimensions int
	// BatchSize is how many texts go in one request (default 64).
	BatchSize int
	// Timeout bounds each request (default 30s).
	Timeout time.Duration
	// MaxRetries is how often a request that got 429 or a 5xx is retried (default 4).
	MaxRetries int
	// Client is the HTTP client (default: a new one).
	Client *http.Client
	// QueryPrefix and DocumentPrefix go before each search query and each
	// text searched, for a model trained with its inputs marked: e5's
	// "query: " and "passage: ", nomic-embed-text's "search_query: " and
	// "search_document: ", bge's instruction before queries alone.
	QueryPrefix, DocumentPrefix string
}

// fingerprint names the provider, model, dimensions and, when a model's
// inputs are marked, the marks: vectors of texts marked otherwise are not
// comparable. Unmarked, it is what it was before marks existed, so an
// index built then is not embedded again.
func (c *HTTPConfig) fingerprint(provider string) string {
	f := fmt.Sprintf("%s/%s/%s/%d", provider, c.BaseURL, c.Model, c.Dimensions)
	if c.QueryPrefix != "" || c.DocumentPrefix != "" {
		f += fmt.Sprintf("/query=%q/document=%q", c.QueryPrefix, c.DocumentPrefix)
	}
	return f
}

// marked is texts, each after prefix.
func marked(prefix string, texts []string) []string {
	if prefix == "" {
		return texts
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = prefix + t
	}
	return out
}

func (c *HTTPConfig) check(provider string) error {
	if c.BaseURL == "" || c.Model == "" {
		return fmt.Errorf("embed: %s needs a base URL and a model", provider)
	}
	if c.Dimensions <= 0 {
		return fmt.Errorf("embed: %s needs the model's dimensions (for example 1536 for text-embedding-3-small)", provider)
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 64
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.MaxRetries < 0 {
		return fmt.Errorf("embed: %s max retries %d is negative", provider, c.MaxRetries)
	} else if c.MaxRetries == 0 {
		c.MaxRetries = 4
	}
	if c.Client == nil {
		c.Client = &http.Client{}
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	return nil
}

// APIError is an error status from an embedding API.
type APIError struct {
	Provider string
	Status   int
	Message  string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("embed: %s answered %d: %s", e.Provider, e.Status, e.Message)
}

// post sends body as JSON and decodes the answer into out, retrying 429s
// and 5xx with exponential backoff (or the server's Retry-After).
func (c *HTTPConfig) post(ctx context.Context, provider, path string, body, out any, apiError func([]byte) string) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		status, respBody, retryAfter, err := c.once(ctx, path, payload)
		if err == nil && status == http.StatusOK {
			if err := json.Unmarshal(respBody, out); err != nil {
				return fmt.Errorf("embed: %s answered with JSON this client cannot read: %w", provider, err)
			}
			return nil
		}
		retryable := err != nil || retry.Retryable(status)
		if err == nil {
			err = &APIError{Provider: provider, Status: status, Message: c.redact(apiError(respBody))}
		} else {
			err = fmt.Errorf("embed: calling %s: %s", provider, c.redact(err.Error()))
		}
		if !retryable || attempt >= c.MaxRetries || ctx.Err() != nil || !retry.Wait(ctx, attempt, retryAfter) {
			return err
		}
	}
}

func (c *HTTPConfig) once(ctx context.Context, path string, payload []byte) (int, []byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return 0, nil, 0, err
	}
	return resp.StatusCode, body, retry.After(resp.Header), nil
}

// redact removes the API key from text that came from elsewhere: some
// providers quote the key they refused.
func (c *HTTPConfig) redact(s string) string {
	if c.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.APIKey, "[redacted]")
}

// batches embeds texts in groups of BatchSize with call.
func (c *HTTPConfig) batches(ctx context.Context, texts []string, call func(ctx context.Context, batch []string) ([][]float32, error)) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.BatchSize {
		batch := texts[start:min(start+c.BatchSize, len(texts))]
		vecs, err := call(ctx, batch)
		if err != nil {
			return nil, err
		}
		if len(vecs) != len(batch) {
			return nil, fmt.Errorf("embed: asked for %d vectors, got %d", len(batch), len(vecs))
		}
		for _, v := range vecs {
			if len(v) != c.Dimensions {
				return nil, fmt.Errorf("embed: model %q returned %d dimensions, configured for %d: fix the dimensions setting", c.Model, len(v), c.Dimensions)
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}
