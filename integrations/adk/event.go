package hectoradk

import (
	"encoding/json"
	"fmt"
	"strings"

	adksession "google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	hsession "github.com/hectormem/hector/pkg/session"
)

// metadataKey is where a Hector event keeps what of an ADK event Hector has
// no field of its own for: the content as ADK wrote it (every kind of
// part), usage, grounding, the actions beyond state and artifacts. The
// event's ID, author, invocation, branch, time, state delta and artifact
// delta are Hector's own fields, and its words are Hector's message too:
// what the index searches, and what other clients read.
const metadataKey = "adk"

// toHector is e as Hector stores it. e's temp: keys must be gone already.
func toHector(e *adksession.Event) (*hsession.Event, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("hectoradk: the event cannot be written as JSON: %w", err)
	}
	var rest map[string]any
	if err := json.Unmarshal(raw, &rest); err != nil {
		return nil, err
	}
	for _, native := range []string{"id", "timestamp", "invocationId", "author", "branch"} {
		delete(rest, native)
	}
	// A delta with keys is Hector's; an empty one stays, so that an empty
	// map comes back empty rather than nil.
	if actions, ok := rest["actions"].(map[string]any); ok {
		if len(e.Actions.StateDelta) > 0 {
			delete(actions, "stateDelta")
		}
		if len(e.Actions.ArtifactDelta) > 0 {
			delete(actions, "artifactDelta")
		}
		if len(actions) == 0 {
			delete(rest, "actions")
		}
	}
	return &hsession.Event{
		ID:           e.ID,
		InvocationID: e.InvocationID,
		Author:       e.Author,
		Branch:       e.Branch,
		Timestamp:    e.Timestamp,
		Message:      message(e),
		Actions:      hsession.Actions{StateDelta: e.Actions.StateDelta, ArtifactDelta: e.Actions.ArtifactDelta},
		Metadata:     map[string]any{metadataKey: rest},
	}, nil
}

// message is what e says in Hector's words: its text (thoughts left out),
// tool calls and tool results; nil when it says nothing.
func message(e *adksession.Event) *hsession.Message {
	c := e.Content
	if c == nil {
		return nil
	}
	m := &hsession.Message{Role: c.Role}
	if m.Role == "" {
		m.Role = roleOf(e.Author)
	}
	for _, p := range c.Parts {
		switch {
		case p == nil:
		case p.Text != "" && !p.Thought:
			m.Parts = append(m.Parts, hsession.Part{Type: hsession.PartText, Text: p.Text})
		case p.FunctionCall != nil && p.FunctionCall.ID != "" && p.FunctionCall.Name != "":
			m.Parts = append(m.Parts, hsession.Part{Type: hsession.PartToolCall,
				ToolCall: &hsession.ToolCall{ID: p.FunctionCall.ID, Name: p.FunctionCall.Name, Arguments: p.FunctionCall.Args}})
		case p.FunctionResponse != nil && p.FunctionResponse.ID != "":
			m.Parts = append(m.Parts, hsession.Part{Type: hsession.PartToolResult,
				ToolResult: &hsession.ToolResult{CallID: p.FunctionResponse.ID, Name: p.FunctionResponse.Name, Content: p.FunctionResponse.Response}})
		}
	}
	if len(m.Parts) == 0 {
		return nil
	}
	return m
}

// roleOf is the role of what an author says when its content names none:
// ADK's user is the person, every other author an agent.
func roleOf(author string) string {
	if author == "user" {
		return genai.RoleUser
	}
	return genai.RoleModel
}

// fromHector is the ADK event h holds: as ADK wrote it, or, for an event
// another client of Hector wrote, made from its message.
func fromHector(h *hsession.Event) (*adksession.Event, error) {
	e := &adksession.Event{}
	if rest, ok := h.Metadata[metadataKey]; ok {
		raw, err := json.Marshal(rest)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, e); err != nil {
			return nil, fmt.Errorf("hectoradk: event %s holds an ADK event that does not read back: %w", h.ID, err)
		}
	} else {
		e.Content = content(h.Message)
	}
	e.ID, e.InvocationID, e.Author, e.Branch, e.Timestamp = h.ID, h.InvocationID, h.Author, h.Branch, h.Timestamp
	if len(h.Actions.StateDelta) > 0 {
		e.Actions.StateDelta = h.Actions.StateDelta
	}
	if len(h.Actions.ArtifactDelta) > 0 {
		e.Actions.ArtifactDelta = h.Actions.ArtifactDelta
	}
	return e, nil
}

// content is a Hector message as genai content.
func content(m *hsession.Message) *genai.Content {
	if m == nil {
		return nil
	}
	c := &genai.Content{Role: genai.RoleModel}
	if m.Role == hsession.RoleUser {
		c.Role = genai.RoleUser
	}
	for _, p := range m.Parts {
		switch {
		case p.Type == hsession.PartText:
			c.Parts = append(c.Parts, genai.NewPartFromText(p.Text))
		case p.Type == hsession.PartToolCall && p.ToolCall != nil:
			c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: p.ToolCall.ID, Name: p.ToolCall.Name, Args: p.ToolCall.Arguments}})
		case p.Type == hsession.PartToolResult && p.ToolResult != nil:
			resp, ok := p.ToolResult.Content.(map[string]any)
			if !ok {
				resp = map[string]any{"output": p.ToolResult.Content}
			}
			c.Parts = append(c.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: p.ToolResult.CallID, Name: p.ToolResult.Name, Response: resp}})
		}
	}
	return c
}

// withoutTemp is e without its temp: keys, which live for one invocation
// and are never stored; e itself when it has none.
func withoutTemp(e *adksession.Event) *adksession.Event {
	kept := map[string]any{}
	for k, v := range e.Actions.StateDelta {
		if !strings.HasPrefix(k, adksession.KeyPrefixTemp) {
			kept[k] = v
		}
	}
	if len(kept) == len(e.Actions.StateDelta) {
		return e
	}
	c := *e
	c.Actions.StateDelta = kept
	return &c
}
