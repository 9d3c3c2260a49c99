package session

import (
	"strings"
	"time"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleTool      = "tool"
)

// PartType names what a Part carries.
type PartType string

// The part types.
const (
	PartText       PartType = "text"
	PartData       PartType = "data"
	PartFile       PartType = "file"
	PartToolCall   PartType = "tool_call"
	PartToolResult PartType = "tool_result"
)

// Event is one entry of a session's append-only log.
type Event struct {
	ID           string         `json:"id"`
	InvocationID string         `json:"invocation_id,omitempty"`
	Author       string         `json:"author"`
	Branch       string         `json:"branch,omitempty"`
	Message      *Message       `json:"message,omitempty"`
	Actions      Actions        `json:"actions"`
	Timestamp    time.Time      `json:"timestamp"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	// Partial marks a streaming chunk: it is shown live but never stored.
	Partial bool `json:"partial,omitempty"`

	// Seq is the event's position in its session, 1, 2, 3, … with no gap;
	// Cursor its position in the store-wide change feed. The store assigns both.
	Seq    int64 `json:"seq,omitempty"`
	Cursor int64 `json:"cursor,omitempty"`
}

// Message is what a user, model or tool said: {"role":"user","parts":[{"type":"text","text":"Hello"}]}.
type Message struct {
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is one piece of a message; Type says which of the other fields is set.
type Part struct {
	Type       PartType       `json:"type"`
	Text       string         `json:"text,omitempty"`
	Data       map[string]any `json:"data,omitempty"`
	File       *File          `json:"file,omitempty"`
	ToolCall   *ToolCall      `json:"tool_call,omitempty"`
	ToolResult *ToolResult    `json:"tool_result,omitempty"`
}

// File is a file in a message, by reference (URI, often an artifact) or inline.
type File struct {
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	URI      string `json:"uri,omitempty"`
	Data     []byte `json:"data,omitempty"`
}

// ToolCall is a model's request to run a tool. ID pairs it with its result.
type ToolCall struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// ToolResult is what a tool returned for the call with ID CallID.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name,omitempty"`
	Content any    `json:"content,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
}

// Actions are the side effects an event carries.
type Actions struct {
	// StateDelta is applied per key when the event is appended; a nil value
	// deletes the key. temp: keys reach the live session but are never stored.
	StateDelta map[string]any `json:"state_delta,omitempty"`
	// ArtifactDelta records artifact name -> version saved during the event.
	ArtifactDelta map[string]int64 `json:"artifact_delta,omitempty"`
	// Summary marks a summary event and names the events it replaces.
	Summary *SummaryRange `json:"summary,omitempty"`
}

// SummaryRange is the inclusive range of sequence numbers a summary replaces.
type SummaryRange struct {
	FirstSeq int64 `json:"first_seq"`
	LastSeq  int64 `json:"last_seq"`
}

// NewTextMessage returns a message with one text part.
func NewTextMessage(role, text string) *Message {
	return &Message{Role: role, Parts: []Part{{Type: PartText, Text: text}}}
}

// Text joins the message's text parts with newlines.
func (m *Message) Text() string {
	if m == nil {
		return ""
	}
	var texts []string
	for _, p := range m.Parts {
		if p.Type == PartText && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// ToolCalls returns the tool calls in the event's message.
func (e *Event) ToolCalls() []ToolCall {
	var calls []ToolCall
	if e.Message != nil {
		for _, p := range e.Message.Parts {
			if p.Type == PartToolCall && p.ToolCall != nil {
				calls = append(calls, *p.ToolCall)
			}
		}
	}
	return calls
}

// ToolResults returns the tool results in the event's message.
func (e *Event) ToolResults() []ToolResult {
	var results []ToolResult
	if e.Message != nil {
		for _, p := range e.Message.Parts {
			if p.Type == PartToolResult && p.ToolResult != nil {
				results = append(results, *p.ToolResult)
			}
		}
	}
	return results
}

// IsSummary reports whether the event is a summary of earlier events.
func (e *Event) IsSummary() bool { return e.Actions.Summary != nil }
