package workingmemory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// DefaultSummaryPrompt is the LLM summarizer's instruction.
const DefaultSummaryPrompt = "You maintain the running summary of a conversation between a user and an assistant. " +
	"Merge the previous summary with the new messages into one concise summary. Keep facts, names, numbers, " +
	"decisions, preferences and open questions; drop pleasantries. Write plain prose, no preamble."

// LLMConfig configures the LLM summarizer.
type LLMConfig struct {
	// BaseURL of an OpenAI-compatible API, including /v1.
	BaseURL string
	Model   string
	// APIKey is sent as a bearer token; it never appears in an error.
	APIKey  string
	Prompt  string        // default DefaultSummaryPrompt
	Timeout time.Duration // default 60s
	Client  *http.Client
}

// LLM summarizes with any OpenAI-compatible chat-completions endpoint.
type LLM struct{ cfg LLMConfig }

// NewLLM checks cfg and returns the summarizer.
func NewLLM(cfg LLMConfig) (*LLM, error) {
	if cfg.BaseURL == "" || cfg.Model == "" {
		return nil, fmt.Errorf("workingmemory: the LLM summarizer needs a base URL and a model")
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Prompt == "" {
		cfg.Prompt = DefaultSummaryPrompt
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	return &LLM{cfg}, nil
}

func (l *LLM) Summarize(ctx context.Context, previous string, events []*session.Event) (string, error) {
	var conv strings.Builder
	if previous != "" {
		fmt.Fprintf(&conv, "Previous summary:\n%s\n\n", previous)
	}
	conv.WriteString("New messages:\n")
	for _, ev := range events {
		if ev.Message == nil {
			continue
		}
		if text := ev.Message.Text(); text != "" {
			fmt.Fprintf(&conv, "%s: %s\n", ev.Message.Role, text)
		}
		for _, c := range ev.ToolCalls() {
			args, _ := json.Marshal(c.Arguments)
			fmt.Fprintf(&conv, "%s called %s(%s)\n", ev.Message.Role, c.Name, args)
		}
		for _, r := range ev.ToolResults() {
			fmt.Fprintf(&conv, "tool %s returned: %s\n", r.Name, jsonText(r.Content))
		}
	}
	body, _ := json.Marshal(map[string]any{
		"model":       l.cfg.Model,
		"temperature": 0,
		"messages": []map[string]string{
			{"role": "system", "content": l.cfg.Prompt},
			{"role": "user", "content": conv.String()},
		},
	})
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.cfg.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if l.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.cfg.APIKey)
	}
	resp, err := l.cfg.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("summarizer: calling %s: %s", l.cfg.Model, l.redact(err.Error()))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return "", fmt.Errorf("summarizer: reading the answer: %w", err)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	decodeErr := json.Unmarshal(raw, &out)
	if resp.StatusCode != http.StatusOK {
		msg := out.Error.Message
		if msg == "" {
			msg = strings.TrimSpace(string(raw[:min(len(raw), 300)]))
		}
		return "", fmt.Errorf("summarizer: %s answered %d: %s", l.cfg.Model, resp.StatusCode, l.redact(msg))
	}
	if decodeErr != nil || len(out.Choices) == 0 || strings.TrimSpace(out.Choices[0].Message.Content) == "" {
		return "", fmt.Errorf("summarizer: %s returned no summary", l.cfg.Model)
	}
	return strings.TrimSpace(out.Choices[0].Message.Content), nil
}

func (l *LLM) redact(s string) string {
	if l.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, l.cfg.APIKey, "[redacted]")
}
