// Package llm is a client for OpenAI-compatible chat-completions endpoints
// with tool calling (OpenAI, Ollama, vLLM, LM Studio, llama.cpp server),
// plain or streamed.
package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hectormem/hector/internal/retry"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hectormem/hector/pkg/telemetry"
)

// Message is one chat message.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// ToolCall is a model's call of a function.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool describes a function the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// Request is one chat-completions call.
type Request struct {
	Messages []Message
	Tools    []Tool
	// JSONSchema, when set, asks for an answer that is a JSON document of
	// this schema (response_format json_schema, named Name of the schema).
	JSONSchema *JSONSchema
}

// JSONSchema names a schema the answer must follow.
type JSONSchema struct {
	Name   string
	Schema map[string]any
}

// Response is the model's answer: text, tool calls, or both.
type Response struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage // zero when the server does not say
}

// Usage is how many tokens a call took, as the server counts them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Total is every token the call took.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Config configures a Client.
type Config struct {
	BaseURL string // including /v1
	Model   string
	// APIKey is sent as a bearer token; it never appears in an error.
	APIKey     string
	Timeout    time.Duration // per attempt (default 2 minutes)
	MaxRetries int           // for 429 and 5xx (default 3; negative: never retry)
	Client     *http.Client
}

// Client calls one model.
type Client struct{ cfg Config }

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" || cfg.Model == "" {
		return nil, errors.New("llm: a base URL and a model are required")
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 3
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	return &Client{cfg}, nil
}

// Model names the model.
func (c *Client) Model() string { return c.cfg.Model }

func (c *Client) body(req Request, stream bool) ([]byte, error) {
	body := map[string]any{"model": c.cfg.Model, "messages": req.Messages}
	if stream {
		body["stream"] = true
	}
	if len(req.Tools) > 0 {
		var tools []any
		for _, t := range req.Tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
				"name": t.Name, "description": t.Description, "parameters": t.Parameters}})
		}
		body["tools"] = tools
	}
	if js := req.JSONSchema; js != nil {
		body["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": js.Name, "schema": js.Schema, "strict": true}}
	}
	return json.Marshal(body)
}

// send posts req, retrying 429s and 5xx; the caller closes the body and
// calls cancel when done with it.
func (c *Client) send(ctx context.Context, req Request, stream bool) (*http.Response, context.CancelFunc, error) {
	payload, err := c.body(req, stream)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		req, err := http.NewRequestWithContext(actx, http.MethodPost, c.cfg.BaseURL+"/chat/completions", bytes.NewReader(payload))
		if err != nil {
			cancel()
			return nil, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if c.cfg.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
		}
		resp, err := c.cfg.Client.Do(req)
		if err == nil && resp.StatusCode == http.StatusOK {
			return resp, cancel, nil
		}
		var failure error
		retryable := true
		var wait time.Duration
		if err != nil {
			failure = fmt.Errorf("llm: calling %s: %s", c.cfg.Model, c.redact(err.Error()))
		} else {
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			failure = fmt.Errorf("llm: %s answered %d: %s", c.cfg.Model, resp.StatusCode, c.redact(apiMessage(raw)))
			retryable, wait = retry.Retryable(resp.StatusCode), retry.After(resp.Header)
		}
		cancel()
		if !retryable || attempt >= c.cfg.MaxRetries || ctx.Err() != nil || !retry.Wait(ctx, attempt, wait) {
			return nil, nil, failure
		}
	}
}

func apiMessage(raw []byte) string {
	var e struct {
		Error apiError `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(raw[:min(len(raw), 300)]))
}

func (c *Client) redact(s string) string {
	if c.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.APIKey, "[redacted]")
}

// Complete makes one call and returns the whole answer.
func (c *Client) Complete(ctx context.Context, req Request) (*Response, error) {
	return c.call(ctx, req, false, nil)
}

// Stream makes one streamed call, passing each piece of text to onText as
// it arrives, and returns the whole answer. An endpoint that ignores the
// request for a stream and answers one JSON completion is understood too:
// its text reaches onText in one piece.
func (c *Client) Stream(ctx context.Context, req Request, onText func(string)) (*Response, error) {
	return c.call(ctx, req, true, onText)
}

// call reads the answer the way the response's Content-Type says it is
// written, not the way it was asked for: some servers and proxies ignore
// "stream". An answer that carries nothing (no text, no tool calls) is an
// error, never an empty reply.
func (c *Client) call(ctx context.Context, req Request, stream bool, onText func(string)) (out *Response, err error) {
	// The GenAI conventions' span: the model and the tokens, never the messages.
	ctx, span := telemetry.Tracer.Start(ctx, "chat "+c.cfg.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", c.cfg.Model),
		attribute.Bool("hector.llm.stream", stream), attribute.Int("hector.llm.messages", len(req.Messages)), attribute.Int("hector.llm.tools", len(req.Tools))))
	defer func() {
		if out != nil {
			span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", out.Usage.PromptTokens), attribute.Int("gen_ai.usage.output_tokens", out.Usage.CompletionTokens),
				attribute.StringSlice("gen_ai.response.finish_reasons", []string{out.FinishReason}), attribute.Int("hector.llm.tool_calls", len(out.ToolCalls)))
		}
		telemetry.End(span, err)
	}()
	resp, cancel, err := c.send(ctx, req, stream)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	contentType := resp.Header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mediaType == "text/event-stream":
		out, err = c.readStream(resp.Body, onText)
	case mediaType == "application/json" || strings.HasSuffix(mediaType, "+json"):
		if out, err = c.readCompletion(resp.Body); err == nil && onText != nil && out.Content != "" {
			onText(out.Content)
		}
	default:
		return nil, fmt.Errorf("llm: %s answered with Content-Type %.80q, which is neither application/json nor text/event-stream; check that the base URL points at an OpenAI-compatible /v1", c.cfg.Model, contentType)
	}
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(out.Content) == "" && len(out.ToolCalls) == 0 {
		return nil, fmt.Errorf("llm: %s answered with no text and no tool calls (finish_reason %.40q)", c.cfg.Model, out.FinishReason)
	}
	return out, nil
}

// apiError is the error object an endpoint may put in a 200 answer or in a
// stream's chunk.
type apiError struct {
	Message string `json:"message"`
}

func (c *Client) readCompletion(body io.Reader) (*Response, error) {
	var out struct {
		Choices []struct {
			Message      Message `json:"message"`
			FinishReason string  `json:"finish_reason"`
		} `json:"choices"`
		Usage Usage     `json:"usage"`
		Error *apiError `json:"error"`
	}
	if err := json.NewDecoder(body).Decode(&out); err != nil {
		return nil, fmt.Errorf("llm: %s answered with JSON this client cannot read: %w", c.cfg.Model, err)
	}
	if out.Error != nil {
		return nil, fmt.Errorf("llm: %s answered with an error: %s", c.cfg.Model, c.redact(out.Error.Message))
	}
	if len(out.Choices) == 0 {
		return nil, fmt.Errorf("llm: %s answered with no choices", c.cfg.Model)
	}
	ch := out.Choices[0]
	return &Response{Content: ch.Message.Content, ToolCalls: ch.Message.ToolCalls, FinishReason: ch.FinishReason, Usage: out.Usage}, nil
}

// readStream reads server-sent chat-completion chunks. A stream is whole
// only when it says so, with a finish_reason or "data: [DONE]": one that
// just stops was cut off, and what arrived is not the answer.
func (c *Client) readStream(body io.Reader, onText func(string)) (*Response, error) {
	out := &Response{}
	var content strings.Builder
	calls := map[int]*ToolCall{}
	finished := false
	lines := bufio.NewScanner(body)
	lines.Buffer(make([]byte, 64<<10), 8<<20)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			finished = true
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Error *apiError `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return nil, fmt.Errorf("llm: %s streamed a chunk this client cannot read: %w", c.cfg.Model, err)
		}
		if chunk.Error != nil {
			return nil, fmt.Errorf("llm: %s streamed an error: %s", c.cfg.Model, c.redact(chunk.Error.Message))
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != "" {
				content.WriteString(ch.Delta.Content)
				if onText != nil {
					onText(ch.Delta.Content)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				call := calls[tc.Index]
				if call == nil {
					call = &ToolCall{Type: "function"}
					calls[tc.Index] = call
				}
				if tc.ID != "" {
					call.ID = tc.ID
				}
				call.Function.Name += tc.Function.Name
				call.Function.Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != "" {
				out.FinishReason = ch.FinishReason
				finished = true
			}
		}
	}
	if err := lines.Err(); err != nil {
		return nil, fmt.Errorf("llm: reading the stream from %s: %s", c.cfg.Model, c.redact(err.Error()))
	}
	if !finished {
		return nil, fmt.Errorf("llm: the stream from %s ended without a finish_reason or [DONE]: the answer was cut off (%d characters arrived)", c.cfg.Model, content.Len())
	}
	out.Content = content.String()
	// In the order of their indexes, whatever those are: some servers
	// number calls from 1, or leave gaps.
	for _, i := range slices.Sorted(maps.Keys(calls)) {
		out.ToolCalls = append(out.ToolCalls, *calls[i])
	}
	return out, nil
}
