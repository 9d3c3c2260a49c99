package workingmemory

import (
	"slices"

	"github.com/hectormem/hector/pkg/session"
)

// history is a session's events as the windowing strategies see them: the
// latest summary and system events are pinned (always kept), events the
// latest summary replaces and older summaries are gone, and the rest are
// candidates for the window, oldest first.
type history struct {
	events []*session.Event // in input order
	pinned []bool
}

func newHistory(events []*session.Event) history {
	var latest *session.Event
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].IsSummary() {
			latest = events[i]
			break
		}
	}
	var h history
	for _, ev := range events {
		switch {
		case ev.IsSummary():
			if ev != latest {
				continue // superseded: the latest summary includes it
			}
		case latest != nil && ev.Seq > 0 && ev.Seq <= latest.Actions.Summary.LastSeq:
			continue // replaced by the latest summary
		}
		h.events = append(h.events, ev)
		h.pinned = append(h.pinned, ev == latest || isSystem(ev))
	}
	return h
}

func isSystem(ev *session.Event) bool {
	return ev.Message != nil && ev.Message.Role == session.RoleSystem
}

// candidates returns the indexes of the events a window may drop.
func (h history) candidates() []int {
	var c []int
	for i, p := range h.pinned {
		if !p {
			c = append(c, i)
		}
	}
	return c
}

// safeStarts reports, for every start s of a window over events (a suffix
// events[s:]), whether it keeps every tool result with its call: no event
// in the window answers a call made before s.
func safeStarts(events []*session.Event) []bool {
	callAt := map[string]int{}
	for i, ev := range events {
		for _, c := range ev.ToolCalls() {
			if _, seen := callAt[c.ID]; !seen {
				callAt[c.ID] = i
			}
		}
	}
	safe := make([]bool, len(events)+1)
	earliest := len(events) // the earliest call answered at or after s
	safe[len(events)] = true
	for s := len(events) - 1; s >= 0; s-- {
		for _, r := range events[s].ToolResults() {
			if at, ok := callAt[r.CallID]; ok && at < s {
				earliest = min(earliest, at)
			}
		}
		safe[s] = earliest >= s
	}
	return safe
}

// window keeps the pinned events and the newest candidates from the first
// safe start at or after budgetStart (an index into the candidates). When
// no safe window fits the budget it keeps the smallest safe window that
// holds the newest event, and reports overBudget.
func (h history) window(budgetStart int) (kept []*session.Event, overBudget bool) {
	cand := h.candidates()
	events := make([]*session.Event, len(cand))
	for i, ci := range cand {
		events[i] = h.events[ci]
	}
	start := len(events)
	if len(events) > 0 {
		safe := safeStarts(events)
		start = -1
		for s := max(budgetStart, 0); s < len(events); s++ {
			if safe[s] {
				start = s
				break
			}
		}
		if start < 0 { // nothing fits: the smallest safe window
			overBudget = true
			for s := len(events) - 1; s >= 0; s-- {
				if safe[s] {
					start = s
					break
				}
			}
		}
	}
	keep := slices.Clone(h.pinned)
	for _, ci := range cand[start:] {
		keep[ci] = true
	}
	for i, ev := range h.events {
		if keep[i] {
			kept = append(kept, ev)
		}
	}
	return sanitize(kept), overBudget
}

// sanitize removes what a provider would reject and a window cannot fix: a
// tool result whose call is not before it, and a tool call with no result
// after it, unless it is pending (made by the newest event that made calls,
// with only tool results after it). Events are copied, never changed.
func sanitize(events []*session.Event) []*session.Event {
	called := map[string]bool{}
	answered := map[string]bool{}
	for _, ev := range events {
		for _, c := range ev.ToolCalls() {
			called[c.ID] = true
		}
		for _, r := range ev.ToolResults() {
			if called[r.CallID] {
				answered[r.CallID] = true
			}
		}
	}
	pendingFrom := len(events) // events from here on may hold pending calls
	for i := len(events) - 1; i >= 0; i-- {
		if len(events[i].ToolCalls()) > 0 {
			pendingFrom = i
			break
		}
		if !onlyToolResults(events[i]) {
			break
		}
	}
	out := events[:0:0]
	seen := map[string]bool{}
	for i, ev := range events {
		for _, c := range ev.ToolCalls() {
			seen[c.ID] = true
		}
		drop := func(p session.Part) bool {
			switch {
			case p.ToolResult != nil:
				return !seen[p.ToolResult.CallID] // its call is not before it
			case p.ToolCall != nil:
				return !answered[p.ToolCall.ID] && i < pendingFrom
			}
			return false
		}
		if ev.Message == nil || !hasAny(ev.Message.Parts, drop) {
			out = append(out, ev)
			continue
		}
		var parts []session.Part
		for _, p := range ev.Message.Parts {
			if !drop(p) {
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 {
			continue
		}
		cp := *ev
		cp.Message = &session.Message{Role: ev.Message.Role, Parts: parts}
		out = append(out, &cp)
	}
	return out
}

func onlyToolResults(ev *session.Event) bool {
	if ev.Message == nil || len(ev.Message.Parts) == 0 {
		return false
	}
	return !hasAny(ev.Message.Parts, func(p session.Part) bool { return p.ToolResult == nil })
}

func hasAny(parts []session.Part, f func(session.Part) bool) bool {
	for _, p := range parts {
		if f(p) {
			return true
		}
	}
	return false
}
