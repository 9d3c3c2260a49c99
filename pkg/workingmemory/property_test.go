package workingmemory

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/hectormem/hector/pkg/session"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// strategies returns every strategy with a spread of budgets.
func strategies(t testing.TB) []Strategy {
	var out []Strategy
	add := func(cfg Config) {
		s, err := New(cfg, WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	add(Config{Type: "all"})
	for _, n := range []int{1, 2, 3, 5, 10, 50} {
		add(Config{Type: "buffer_window", MaxMessages: n})
	}
	for _, n := range []int{5, 30, 100, 300, 1000, 100000} {
		add(Config{Type: "token_window", MaxTokens: n})
	}
	add(Config{Type: "summary_buffer", MaxMessages: 10, SummaryThreshold: 6})
	return out
}

// checkInvariants holds a strategy's output to what every provider needs.
func checkInvariants(t testing.TB, s Strategy, in, out []*session.Event) {
	t.Helper()
	// An in-order subsequence of the input.
	pos := map[string]int{}
	for i, ev := range in {
		pos[ev.ID] = i
	}
	last := -1
	for _, ev := range out {
		i, ok := pos[ev.ID]
		if !ok || i <= last {
			t.Fatalf("%s: output is not an in-order subsequence of the input (event %s)", s.Name(), ev.ID)
		}
		last = i
	}
	// Every result has its call before it; every call its result after it, unless pending.
	called, answered := map[string]bool{}, map[string]bool{}
	for _, ev := range out {
		for _, r := range ev.ToolResults() {
			if !called[r.CallID] {
				t.Fatalf("%s: result for %s kept without its call", s.Name(), r.CallID)
			}
			answered[r.CallID] = true
		}
		for _, c := range ev.ToolCalls() {
			called[c.ID] = true
		}
	}
	lastCalls := -1
	for i, ev := range out {
		if len(ev.ToolCalls()) > 0 {
			lastCalls = i
		}
	}
	pendingOK := lastCalls >= 0
	for _, ev := range out[max(lastCalls+1, 0):] {
		if !onlyToolResults(ev) {
			pendingOK = false
		}
	}
	for i, ev := range out {
		for _, c := range ev.ToolCalls() {
			if !answered[c.ID] && !(pendingOK && i == lastCalls) {
				t.Fatalf("%s: call %s kept without its result, and it is not the pending last one", s.Name(), c.ID)
			}
		}
	}
	// The latest summary and system events are kept; what the summary replaced is not.
	var latest *session.Event
	for _, ev := range in {
		if ev.IsSummary() {
			latest = ev
		}
	}
	if s.Name() == "all" {
		return
	}
	kept := map[string]bool{}
	for _, ev := range out {
		kept[ev.ID] = true
		if latest != nil && ev.Seq <= latest.Actions.Summary.LastSeq {
			t.Fatalf("%s: event %d kept although the summary replaces 1..%d", s.Name(), ev.Seq, latest.Actions.Summary.LastSeq)
		}
		if ev.IsSummary() && ev != latest {
			t.Fatalf("%s: an older summary was kept", s.Name())
		}
	}
	for _, ev := range in {
		systemAfter := isSystem(ev) && !ev.IsSummary() && (latest == nil || ev.Seq > latest.Actions.Summary.LastSeq)
		if (ev == latest || systemAfter) && !kept[ev.ID] {
			t.Fatalf("%s: pinned event %s dropped", s.Name(), ev.ID)
		}
	}
	// The window holds the newest event, unless it is pinned or replaced.
	if n := len(in); n > 0 && !kept[in[n-1].ID] && !in[n-1].IsSummary() && !onlyToolResults(in[n-1]) && len(in[n-1].ToolCalls()) == 0 {
		t.Fatalf("%s: the newest event was dropped", s.Name())
	}
	// Budgets hold, unless the smallest safe window alone exceeds them.
	switch st := s.(type) {
	case *tokenWindow:
		if got := st.Tokens(out); got > st.max && !isSmallestSafeWindow(in, out) {
			t.Fatalf("token_window %d: kept %d tokens and more than the smallest safe window", st.max, got)
		}
	case *bufferWindow:
		if len(out) > st.max && !isSmallestSafeWindow(in, out) {
			t.Fatalf("buffer_window %d: kept %d events and more than the smallest safe window", st.max, len(out))
		}
	}
}

// isSmallestSafeWindow checks by brute force that the unpinned part of out
// starts at the latest start that cuts no result from its call.
func isSmallestSafeWindow(in, out []*session.Event) bool {
	h := newHistory(in)
	var cand []*session.Event
	for i, ev := range h.events {
		if !h.pinned[i] {
			cand = append(cand, ev)
		}
	}
	safe := func(s int) bool {
		before := map[string]bool{}
		for _, ev := range cand[:s] {
			for _, c := range ev.ToolCalls() {
				before[c.ID] = true
			}
		}
		for _, ev := range cand[s:] {
			for _, r := range ev.ToolResults() {
				if before[r.CallID] {
					return false
				}
			}
		}
		return true
	}
	start := len(cand) - 1
	for start > 0 && !safe(start) {
		start--
	}
	unpinned := 0
	for _, ev := range out {
		if !ev.IsSummary() && !isSystem(ev) {
			unpinned++
		}
	}
	return unpinned <= len(cand)-start
}

func TestStrategiesKeepToolCallsWhole(t *testing.T) {
	all := strategies(t)
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 7))
		in := conversation(r, 1+r.IntN(25))
		for _, s := range all {
			t.Run(fmt.Sprintf("seed%d/%s", seed, s.Name()), func(t *testing.T) {
				checkInvariants(t, s, in, s.FilterEvents(in))
			})
		}
	}
}

func FuzzFilterEvents(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint8(0))
	f.Add(uint64(99), uint8(30), uint8(7))
	all := strategies(f)
	f.Fuzz(func(t *testing.T, seed uint64, turns uint8, which uint8) {
		r := rand.New(rand.NewPCG(seed, uint64(turns)))
		in := conversation(r, int(turns%60))
		s := all[int(which)%len(all)]
		checkInvariants(t, s, in, s.FilterEvents(in))
	})
}
