package workingmemory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// conversation generates a random stored conversation: user and assistant
// text, tool calls (parallel ones too) with their results in one event or
// several, an optional system event, summaries of earlier ranges, and
// possibly a pending call at the end.
func conversation(r *rand.Rand, turns int) []*session.Event {
	var events []*session.Event
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	push := func(role string, parts ...session.Part) *session.Event {
		seq := int64(len(events) + 1)
		ev := &session.Event{ID: fmt.Sprintf("e%d", seq), Seq: seq, Author: role, Timestamp: base.Add(time.Duration(seq) * time.Second),
			Message: &session.Message{Role: role, Parts: parts}}
		events = append(events, ev)
		return ev
	}
	text := func() session.Part {
		words := make([]string, 1+r.IntN(30))
		for i := range words {
			words[i] = []string{"the", "deploy", "Konflux", "42", "weather", "Paris", "budget", "user", "tomorrow", "ok"}[r.IntN(10)]
		}
		return session.Part{Type: session.PartText, Text: strings.Join(words, " ")}
	}
	if r.IntN(3) == 0 {
		push(session.RoleSystem, session.Part{Type: session.PartText, Text: "You are a helpful assistant."})
	}
	calls := 0
	var summarized int64
	for t := 0; t < turns; t++ {
		push(session.RoleUser, text())
		if r.IntN(2) == 0 { // a tool round: one or more parallel calls
			n := 1 + r.IntN(3)
			var callParts []session.Part
			var ids []string
			for range n {
				calls++
				id := fmt.Sprintf("call%d", calls)
				ids = append(ids, id)
				callParts = append(callParts, session.Part{Type: session.PartToolCall, ToolCall: &session.ToolCall{ID: id, Name: "lookup", Arguments: map[string]any{"q": "x"}}})
			}
			if r.IntN(3) == 0 {
				callParts = append([]session.Part{text()}, callParts...)
			}
			push(session.RoleAssistant, callParts...)
			last := t == turns-1
			answered := n
			if last && r.IntN(2) == 0 {
				answered = r.IntN(n) // pending calls at the very end
			}
			r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			if r.IntN(2) == 0 && answered > 0 {
				var res []session.Part
				for _, id := range ids[:answered] {
					res = append(res, session.Part{Type: session.PartToolResult, ToolResult: &session.ToolResult{CallID: id, Name: "lookup", Content: "result text"}})
				}
				push(session.RoleTool, res...)
			} else {
				for _, id := range ids[:answered] {
					push(session.RoleTool, session.Part{Type: session.PartToolResult, ToolResult: &session.ToolResult{CallID: id, Name: "lookup", Content: map[string]any{"v": 1}}})
				}
			}
			if last && answered < n {
				break
			}
		}
		push(session.RoleAssistant, text())
		if r.IntN(8) == 0 && int64(len(events)) > summarized+4 { // a summary of a longer prefix than the last
			lastSeq := summarized + 1 + int64(r.IntN(len(events)-2-int(summarized)))
			summarized = lastSeq
			ev := push(session.RoleSystem, session.Part{Type: session.PartText, Text: fmt.Sprintf("summary up to %d", lastSeq)})
			ev.Author = SummaryAuthor
			ev.Actions.Summary = &session.SummaryRange{FirstSeq: 1, LastSeq: lastSeq}
		}
	}
	return events
}
