package workingmemory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hectormem/hector/pkg/llm"
	"github.com/hectormem/hector/pkg/session"
)

// DefaultSummaryPrompt is the LLM summarizer's instruction.
const DefaultSummaryPrompt = "You maintain the running summary of a conversation between a user and an assistant. " +
	"Merge the previous summary with the new messages into one concise summary. Keep facts, names, numbers, " +
	"decisions, preferences and open questions; drop pleasantries. Write plain prose, no preamble."

// LLM summarizes with a model behind any OpenAI-compatible chat-completions endpoint.
type LLM struct {
	model  *llm.Client
	prompt string
}

// NewLLM returns a summarizer that asks model, with prompt as its
// instruction (empty: DefaultSummaryPrompt).
func NewLLM(model *llm.Client, prompt string) *LLM {
	if prompt == "" {
		prompt = DefaultSummaryPrompt
	}
	return &LLM{model: model, prompt: prompt}
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
	resp, err := l.model.Complete(ctx, llm.Request{Messages: []llm.Message{
		{Role: "system", Content: l.prompt},
		{Role: "user", Content: conv.String()},
	}})
	if err != nil {
		return "", fmt.Errorf("summarizer: %w", err)
	}
	if summary := strings.TrimSpace(resp.Content); summary != "" {
		return summary, nil
	}
	return "", fmt.Errorf("summarizer: %s returned no summary", l.model.Model())
}
