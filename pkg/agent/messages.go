package agent

import (
	"encoding/json"

	"github.com/hectormem/hector/pkg/llm"
	"github.com/hectormem/hector/pkg/session"
)

// toMessages turns the events working memory kept into a chat request:
// the instruction, reference data (in a message of its own, labelled as
// data), then the summary of what came before (summary events stay where
// they were appended in the log, so they are moved up here), then the
// events in order, each tool call with its results.
func toMessages(instruction, reference string, events []*session.Event) []llm.Message {
	var msgs []llm.Message
	for _, text := range []string{instruction, reference} {
		if text != "" {
			msgs = append(msgs, llm.Message{Role: "system", Content: text})
		}
	}
	for _, ev := range events {
		if ev.IsSummary() {
			msgs = append(msgs, llm.Message{Role: "system", Content: "Summary of the earlier conversation:\n" + ev.Message.Text()})
		}
	}
	for _, ev := range events {
		if ev.Message == nil || ev.IsSummary() {
			continue
		}
		switch ev.Message.Role {
		case session.RoleTool:
			for _, r := range ev.ToolResults() {
				msgs = append(msgs, llm.Message{Role: "tool", ToolCallID: r.CallID, Content: contentText(r.Content)})
			}
		case session.RoleAssistant:
			m := llm.Message{Role: "assistant", Content: ev.Message.Text()}
			for _, c := range ev.ToolCalls() {
				tc := llm.ToolCall{ID: c.ID, Type: "function"}
				tc.Function.Name = c.Name
				args, _ := json.Marshal(c.Arguments)
				tc.Function.Arguments = string(args)
				m.ToolCalls = append(m.ToolCalls, tc)
			}
			msgs = append(msgs, m)
		default: // user and system messages
			msgs = append(msgs, llm.Message{Role: ev.Message.Role, Content: ev.Message.Text()})
		}
	}
	return msgs
}

func contentText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(raw)
}
