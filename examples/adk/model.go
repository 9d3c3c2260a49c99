package main

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// scriptedModel stands in for an LLM: it asks memory about every question
// and answers with the best memory found; a statement it acknowledges.
type scriptedModel struct{}

func (scriptedModel) Name() string { return "scripted" }

func (scriptedModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(&model.LLMResponse{Content: reply(req.Contents), TurnComplete: true}, nil)
	}
}

func reply(contents []*genai.Content) *genai.Content {
	if len(contents) == 0 {
		return genai.NewContentFromText("Hello!", genai.RoleModel)
	}
	last := contents[len(contents)-1]
	for _, p := range last.Parts {
		if r := p.FunctionResponse; r != nil && r.Name == "load_memory" {
			if best := firstMemory(r.Response, question(contents)); best != "" {
				return genai.NewContentFromText(fmt.Sprintf("You told me: %q", best), genai.RoleModel)
			}
			return genai.NewContentFromText("I don't remember you telling me.", genai.RoleModel)
		}
		if strings.HasSuffix(strings.TrimSpace(p.Text), "?") {
			return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
				Name: "load_memory", Args: map[string]any{"query": p.Text}}}}}
		}
	}
	return genai.NewContentFromText("Noted.", genai.RoleModel)
}

// firstMemory is the text of the best memory a user said, from
// load_memory's answer, other than the question being answered (which
// memory holds too, since it was said in this session).
func firstMemory(resp map[string]any, asked string) string {
	entries, _ := resp["memories"].([]memory.Entry)
	for _, e := range entries {
		if e.Author == "user" && e.Content != nil && len(e.Content.Parts) > 0 && e.Content.Parts[0].Text != asked {
			return e.Content.Parts[0].Text
		}
	}
	return ""
}

// question is what the user asked before the model called load_memory.
func question(contents []*genai.Content) string {
	for i := len(contents) - 1; i >= 0; i-- {
		if c := contents[i]; c.Role == genai.RoleUser && len(c.Parts) > 0 && c.Parts[0].Text != "" {
			return c.Parts[0].Text
		}
	}
	return ""
}

func memoryCount(resp map[string]any) int {
	entries, _ := resp["memories"].([]memory.Entry)
	return len(entries)
}
