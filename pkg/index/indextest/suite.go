// Package indextest is the conformance suite every index type runs:
// keyword, vector and hybrid, in process and on each external store.
package indextest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// Factory returns a new, empty index for one test, built with opts: in
// process, or in an external store of its own.
type Factory func(t *testing.T, opts ...index.Option) index.Live

// Run runs the whole suite. Every index it makes is started first, as
// its users must. An index in process is persisted by a snapshot.
func Run(t *testing.T, newIndex Factory) { run(t, newIndex, snapshotted) }

// RunOnDisk runs the whole suite on indexes in process kept on disk: each
// made with index.WithFile, and persisted by it.
func RunOnDisk(t *testing.T, newIndex Factory) {
	run(t, func(t *testing.T, opts ...index.Option) index.Live {
		idx := newIndex(t, append([]index.Option{index.WithFile(filepath.Join(t.TempDir(), "index.db"))}, opts...)...)
		t.Cleanup(func() { idx.Close() }) // its file's connections and flusher; closing twice is harmless
		return idx
	}, onDisk)
}

// persistence is how an index in process is kept: the option naming its
// file, and how to damage that file as a crash or a bad disk might.
type persistence struct {
	file   string
	option func(path string) index.Option
	damage func(t *testing.T, path string)
}

var snapshotted = persistence{
	file:   "index.snapshot",
	option: index.WithSnapshot,
	damage: func(t *testing.T, path string) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)/2] ^= 0xff
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	},
}

// onDisk damages an SQLite file where SQLite reads first: its header.
var onDisk = persistence{
	file:   "index.db",
	option: index.WithFile,
	damage: func(t *testing.T, path string) {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("not an index at all, damaged"), 0); err != nil {
			t.Fatal(err)
		}
	},
}

func run(t *testing.T, newIndex Factory, kept persistence) {
	newIndex = started(newIndex)
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, newIndex Factory)
	}{
		{"FindsAndRanks", testFindsAndRanks},
		{"Isolation", testIsolation},
		{"BadRequests", testBadRequests},
		{"Incremental", testIncremental},
		{"PartialHandles", testPartialHandles},
		{"WhatIsIndexed", testWhatIsIndexed},
		{"AuthorsAreSearchable", testAuthorsAreSearchable},
		{"Filters", testFilters},
		{"Recency", testRecency},
		{"ClearAndDeleteCascade", testClearAndDeleteCascade},
		{"RebuildEquivalence", testRebuildEquivalence},
		{"RebuildCancelled", testRebuildCancelled},
		{"CatchUp", testCatchUp},
		{"Persistence", func(t *testing.T, newIndex Factory) { testPersistence(t, newIndex, kept) }},
		{"TextStoresCannotHold", testTextStoresCannotHold},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newIndex) })
	}
}

// started makes indexes with newIndex and starts them.
func started(newIndex Factory) Factory {
	return func(t *testing.T, opts ...index.Option) index.Live {
		idx := newIndex(t, opts...)
		if err := idx.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		return idx
	}
}

// corpus is a small memory with overlapping words across users and apps.
var corpus = map[[2]string][][]string{ // (app, user) -> sessions -> user messages
	{"app", "alice"}: {
		{"My dog Rex loves the park near the river", "I am allergic to peanuts"},
		{"Book a flight to Lisbon in May", "My favourite colour is green"},
	},
	{"app", "bob"}: {
		{"My dog Max hates the park", "I love peanuts and cashews"},
		{"Flight to Berlin next week", "Lisbon was lovely last year"},
	},
	{"app", "carol"}: {
		{"The river park is closed for repairs", "Green tea every morning"},
	},
	{"other", "alice"}: {
		{"In this app my dog is called Bello", "Peanuts are fine here"},
	},
}

var queries = []string{"dog park", "peanuts", "Lisbon flight", "green", "river", "dog", "unknown words entirely"}

// fill stores the corpus, each user message followed by an agent reply,
// and returns the sessions by (app, user).
func fill(t *testing.T, sessions session.Service, idx index.Service) map[[2]string][]session.Session {
	t.Helper()
	ctx := t.Context()
	out := map[[2]string][]session.Session{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	for _, key := range sortedKeys() {
		for i, msgs := range corpus[key] {
			resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: key[0], UserID: key[1], SessionID: fmt.Sprintf("%s-%s-s%d", key[0], key[1], i)})
			if err != nil {
				t.Fatal(err)
			}
			s := resp.Session
			for _, m := range msgs {
				n++
				for _, ev := range []*session.Event{
					{Author: "user", Timestamp: base.Add(time.Duration(n) * time.Minute), Message: session.NewTextMessage(session.RoleUser, m)},
					{Author: "agent", Timestamp: base.Add(time.Duration(n)*time.Minute + time.Second), Message: session.NewTextMessage(session.RoleAssistant, "Noted.")},
				} {
					if err := sessions.AppendEvent(ctx, s, ev); err != nil {
						t.Fatal(err)
					}
				}
				if idx != nil {
					if err := idx.Index(ctx, s); err != nil {
						t.Fatal(err)
					}
				}
			}
			out[key] = append(out[key], s)
		}
	}
	return out
}

func sortedKeys() [][2]string {
	var keys [][2]string
	for k := range corpus {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	return keys
}

func search(t *testing.T, idx index.Service, app, user, query string, limit int) []index.SearchResult {
	t.Helper()
	resp, err := idx.Search(t.Context(), &index.SearchRequest{Query: query, AppName: app, UserID: user, Limit: limit})
	if err != nil {
		t.Fatalf("Search(%q as %s/%s): %v", query, app, user, err)
	}
	return resp.Results
}

func contents(rs []index.SearchResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Content)
	}
	return out
}

// answers records every query's results for every user, to compare indexes.
func answers(t *testing.T, idx index.Service) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for key := range corpus {
		for _, q := range queries {
			var rows []string
			for _, r := range search(t, idx, key[0], key[1], q, 5) {
				rows = append(rows, fmt.Sprintf("%s/%s %.4f", r.SessionID, r.EventID, r.Score))
			}
			out[key[0]+"/"+key[1]+": "+q] = rows
		}
	}
	return out
}

func sameAnswers(t *testing.T, what string, got, want map[string][]string) {
	t.Helper()
	for k, w := range want {
		if g := got[k]; !slices.Equal(g, w) {
			t.Errorf("%s: %s = %q, want %q", what, k, g, w)
		}
	}
}

func testFindsAndRanks(t *testing.T, newIndex Factory) {
	sessions := session.NewInMemoryService()
	idx := newIndex(t)
	fill(t, sessions, idx)
	rs := search(t, idx, "app", "alice", "peanuts allergic", 10)
	if len(rs) == 0 || rs[0].Content != "I am allergic to peanuts" {
		t.Fatalf("best result for 'peanuts allergic' = %q", contents(rs))
	}
	top := rs[0]
	if top.SessionID != "app-alice-s0" || top.EventID == "" || top.Author != "user" || top.Timestamp.IsZero() || top.Score <= 0 {
		t.Errorf("provenance of the top result = %+v", top)
	}
	for i := 1; i < len(rs); i++ {
		if rs[i].Score > rs[i-1].Score {
			t.Errorf("results not ordered by score: %v then %v", rs[i-1].Score, rs[i].Score)
		}
	}
	if rs := search(t, idx, "app", "alice", "Lisbon", 10); len(rs) == 0 || !strings.Contains(rs[0].Content, "Lisbon") {
		t.Errorf("'Lisbon' finds %q", contents(rs))
	}
	if rs := search(t, idx, "app", "alice", "dog park", 1); len(rs) != 1 {
		t.Errorf("limit 1 returned %d results", len(rs))
	}
	if rs := search(t, idx, "app", "nobody", "dog", 10); len(rs) != 0 {
		t.Errorf("a user with no memory found %q", contents(rs))
	}
	if rs := search(t, idx, "app", "alice", "   ", 10); len(rs) != 0 {
		t.Errorf("a blank query found %q", contents(rs))
	}
}

func testIsolation(t *testing.T, newIndex Factory) {
	sessions := session.NewInMemoryService()
	idx := newIndex(t)
	// Many users sharing every word, so any leak would show.
	ctx := t.Context()
	const users = 12
	for u := range users {
		resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: fmt.Sprintf("u%d", u), SessionID: fmt.Sprintf("u%d-s", u)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			text := fmt.Sprintf("shared words memory secret number %d of user u%d", i, u)
			if err := sessions.AppendEvent(ctx, resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Index(ctx, resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	fill(t, sessions, idx)
	for u := range users {
		user := fmt.Sprintf("u%d", u)
		for _, q := range []string{"shared words memory", "secret", "u3", "user u7 secret number 2", "dog park peanuts"} {
			for _, r := range search(t, idx, "app", user, q, 100) {
				if r.SessionID != user+"-s" {
					t.Fatalf("%s searching %q got %s's event %q", user, q, r.SessionID, r.Content)
				}
			}
		}
	}
	for key := range corpus {
		for _, q := range queries {
			for _, r := range search(t, idx, key[0], key[1], q, 100) {
				if !strings.HasPrefix(r.SessionID, key[0]+"-"+key[1]+"-") {
					t.Fatalf("%s/%s searching %q got %s's event %q", key[0], key[1], q, r.SessionID, r.Content)
				}
			}
		}
	}
}

func testBadRequests(t *testing.T, newIndex Factory) {
	idx := newIndex(t)
	for what, req := range map[string]*index.SearchRequest{
		"nil":            nil,
		"no app":         {Query: "x", UserID: "u"},
		"no user":        {Query: "x", AppName: "a"},
		"negative limit": {Query: "x", AppName: "a", UserID: "u", Limit: -1},
		"huge limit":     {Query: "x", AppName: "a", UserID: "u", Limit: index.MaxLimit + 1},
		"unknown role":   {Query: "x", AppName: "a", UserID: "u", Filter: index.Filter{Role: "admin"}},
		"NUL in author":  {Query: "x", AppName: "a", UserID: "u", Filter: index.Filter{Author: "bo\x00b"}},
		"bad UTF-8":      {Query: "x", AppName: "a", UserID: "u", Filter: index.Filter{SessionID: "s\xff"}},
		"empty window": {Query: "x", AppName: "a", UserID: "u",
			Filter: index.Filter{After: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Before: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}},
		"negative half-life": {Query: "x", AppName: "a", UserID: "u", RecencyHalfLife: -time.Hour},
		"huge query":         {Query: strings.Repeat("x", index.MaxQueryBytes+1), AppName: "a", UserID: "u"},
	} {
		if _, err := idx.Search(t.Context(), req); !errors.Is(err, index.ErrInvalidArgument) {
			t.Errorf("Search with %s: %v, want ErrInvalidArgument", what, err)
		}
	}
	// A query of nearly the limit's length, of over a thousand words, is
	// searched as any other, in every store.
	sessions := session.NewInMemoryService()
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "a", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ev := &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "the lighthouse keeper paints")}
	if err := sessions.AppendEvent(t.Context(), resp.Session, ev); err != nil {
		t.Fatal(err)
	}
	if err := idx.Index(t.Context(), resp.Session); err != nil {
		t.Fatal(err)
	}
	var long strings.Builder
	for i := 0; long.Len() < index.MaxQueryBytes-20; i++ {
		fmt.Fprintf(&long, "%s %d ", topics[i%len(topics)], i)
	}
	found, err := idx.Search(t.Context(), &index.SearchRequest{Query: long.String(), AppName: "a", UserID: "u"})
	if err != nil || len(found.Results) == 0 || found.Results[0].EventID != ev.ID {
		t.Errorf("Search with a query of %d bytes: %+v, %v; want the lighthouse found", long.Len(), found, err)
	}
	if err := idx.Clear(t.Context(), "", "u", "s"); err == nil {
		t.Error("Clear without an app: no error")
	}
}

func testIncremental(t *testing.T, newIndex Factory) {
	sessions := session.NewInMemoryService()
	idx := newIndex(t)
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		ev := &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, fmt.Sprintf("turn %d about %s", i, topics[i]))}
		if err := sessions.AppendEvent(t.Context(), resp.Session, ev); err != nil {
			t.Fatal(err)
		}
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
		if err := idx.Index(t.Context(), resp.Session); err != nil { // nothing new: no change
			t.Fatal(err)
		}
	}
	rs := search(t, idx, "app", "u", "turn about", 100)
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[r.EventID] {
			t.Fatalf("event %s indexed twice", r.EventID)
		}
		seen[r.EventID] = true
	}
	if len(rs) != 30 {
		t.Errorf("%d results for a word in all 30 turns, want 30", len(rs))
	}
	if rs := search(t, idx, "app", "u", topics[17], 3); len(rs) == 0 || rs[0].Content != "turn 17 about "+topics[17] {
		t.Errorf("%s finds %q", topics[17], contents(rs))
	}
}

// topics are words that mean different things, which every index, by
// words or by meaning, tells apart.
var topics = []string{"volcano", "guitar", "penguin", "cathedral", "bicycle", "saxophone", "glacier", "tomato", "lighthouse",
	"telescope", "kangaroo", "umbrella", "pyramid", "dentist", "chocolate", "submarine", "tornado", "violin", "cactus",
	"helicopter", "pancake", "skyscraper", "octopus", "marathon", "passport", "waterfall", "sandwich", "microscope",
	"dolphin", "blizzard"}

func testPartialHandles(t *testing.T, newIndex Factory) {
	sessions := session.NewInMemoryService()
	idx := newIndex(t, index.WithSessions(sessions))
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "a note about the "+topics[i])}); err != nil {
			t.Fatal(err)
		}
	}
	// A handle holding only the last two events still gets all ten indexed.
	recent, err := sessions.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s", NumRecentEvents: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Index(t.Context(), recent.Session); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if rs := search(t, idx, "app", "u", topics[i], 1); len(rs) != 1 || rs[0].Content != "a note about the "+topics[i] {
			t.Errorf("the note about the %s not indexed from a partial handle: %q", topics[i], contents(rs))
		}
	}
}

func testWhatIsIndexed(t *testing.T, newIndex Factory) {
	sessions := session.NewInMemoryService()
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	s := resp.Session
	for _, ev := range []*session.Event{
		{Author: "system", Message: session.NewTextMessage(session.RoleSystem, "the user lives near zurich")},
		{Author: "user", Message: session.NewTextMessage(session.RoleUser, "weather in zurich please")},
		{Author: "agent", Message: &session.Message{Role: session.RoleAssistant, Parts: []session.Part{{Type: session.PartToolCall, ToolCall: &session.ToolCall{ID: "c1", Name: "weather"}}}}},
		{Author: "tool", Message: &session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolResult: &session.ToolResult{CallID: "c1", Content: "zurich sunny, a tornado warning"}}}}},
		{Author: "agent", Message: session.NewTextMessage(session.RoleAssistant, "It is sunny in zurich")},
		{Author: "agent", Message: session.NewTextMessage(session.RoleAssistant, "recap: zurich weather and the tornado"), Actions: session.Actions{Summary: &session.SummaryRange{FirstSeq: 1, LastSeq: 5}}},
		{Author: "user"}, // empty
	} {
		if err := sessions.AppendEvent(t.Context(), s, ev); err != nil {
			t.Fatal(err)
		}
	}
	plain := newIndex(t)
	if err := plain.Index(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if got := contents(search(t, plain, "app", "u", "zurich tornado recap", 10)); len(got) != 3 {
		t.Errorf("by default, indexed %q; want every text message (system, user, agent), not tool results or summaries", got)
	}
	all := newIndex(t, index.WithInclude(index.Include{ToolResults: true, Summaries: true}))
	if err := all.Index(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if got := contents(search(t, all, "app", "u", "zurich tornado recap", 10)); len(got) != 5 {
		t.Errorf("with tool results and summaries, indexed %q; want 5", got)
	}
}

// A named author is found with the text (questions say who said it); a
// role is not a name, and matches nothing.
func testAuthorsAreSearchable(t *testing.T, newIndex Factory) {
	if idx := newIndex(t); idx.Name() == string(index.KindVector) {
		t.Skip("n/a: a vector index finds texts by their meaning, not by words")
	}
	sessions := session.NewInMemoryService()
	idx := newIndex(t)
	resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []*session.Event{
		{Author: "Caroline", Message: session.NewTextMessage(session.RoleUser, "I went to the support group yesterday")},
		{Author: "Melanie", Message: session.NewTextMessage(session.RoleUser, "The support group sounds lovely")},
		{Author: "user", Message: session.NewTextMessage(session.RoleUser, "pottery class on Sunday")},
	} {
		if err := sessions.AppendEvent(t.Context(), resp.Session, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Index(t.Context(), resp.Session); err != nil {
		t.Fatal(err)
	}
	// Her words and her name: first by words alone; found, fused with
	// meaning (how signals are weighed is fusion's business).
	rs := search(t, idx, "app", "u", "what did Caroline say about the support group", 3)
	found := slices.ContainsFunc(rs, func(r index.SearchResult) bool { return r.Author == "Caroline" })
	if !found || rs[0].Author != "Caroline" && idx.Name() == string(index.KindKeyword) {
		t.Errorf("a question naming Caroline found %q, want hers (first, by words alone)", contents(rs))
	}
	rs = search(t, idx, "app", "u", "Melanie", 3)
	if len(rs) == 0 || rs[0].Author != "Melanie" || rs[0].Content != "The support group sounds lovely" ||
		len(rs) != 1 && idx.Name() == string(index.KindKeyword) {
		t.Errorf("the name alone found %q, want Melanie's message (with its own text) first", contents(rs))
	}
	if rs := search(t, idx, "app", "u", "user", 3); len(rs) != 0 && idx.Name() == string(index.KindKeyword) {
		t.Errorf("the role user, which names no one, found %q", contents(rs))
	}
}

func testClearAndDeleteCascade(t *testing.T, newIndex Factory) {
	idx := newIndex(t)
	sessions := session.NewInMemoryService(session.WithDeleteHook(idx.Clear))
	fill(t, sessions, idx)
	if err := idx.Clear(t.Context(), "app", "alice", "app-alice-s0"); err != nil {
		t.Fatal(err)
	}
	for _, r := range search(t, idx, "app", "alice", "dog park peanuts", 10) {
		if r.SessionID == "app-alice-s0" {
			t.Fatalf("cleared session still found: %q", r.Content)
		}
	}
	if rs := search(t, idx, "app", "alice", "Lisbon", 10); len(rs) == 0 {
		t.Error("clearing one session cleared another")
	}
	if err := sessions.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "alice", SessionID: "app-alice-s1"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range search(t, idx, "app", "alice", "Lisbon flight green", 10) {
		if r.SessionID == "app-alice-s1" {
			t.Errorf("deleting the session left %q in the index", r.Content)
		}
	}
	if rs := search(t, idx, "app", "bob", "Lisbon", 10); len(rs) == 0 {
		t.Error("deleting alice's session cleared bob's entries")
	}

	// An index following the sessions, with no delete hook, learns of a
	// deletion from the change feed: when it next catches up, which a
	// server does after each delete.
	plain := session.NewInMemoryService()
	follower := newIndex(t, index.WithSessions(plain))
	fill(t, plain, follower)
	if err := plain.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "bob", SessionID: "app-bob-s1"}); err != nil {
		t.Fatal(err)
	}
	if err := follower.CatchUp(t.Context(), plain); err != nil {
		t.Fatal(err)
	}
	for _, r := range search(t, follower, "app", "bob", "Lisbon flight", 10) {
		if r.SessionID == "app-bob-s1" {
			t.Errorf("an index following the sessions kept a deleted session's %q", r.Content)
		}
	}
}

func testRebuildEquivalence(t *testing.T, newIndex Factory) {
	sessions := session.NewInMemoryService()
	live := newIndex(t)
	fill(t, sessions, live)
	// Churn: a deleted session and a re-created one must come out the same too.
	if err := sessions.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "carol", SessionID: "app-carol-s0"}); err != nil {
		t.Fatal(err)
	}
	if err := live.Clear(t.Context(), "app", "carol", "app-carol-s0"); err != nil {
		t.Fatal(err)
	}
	want := answers(t, live)

	var reports []index.Progress
	rebuilt := newIndex(t, index.WithProgress(func(p index.Progress) { reports = append(reports, p) }))
	if err := rebuilt.Rebuild(t.Context(), sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, "after a full rebuild", answers(t, rebuilt), want)
	if len(reports) < 2 || !reports[len(reports)-1].Done || reports[len(reports)-1].Indexed == 0 {
		t.Errorf("progress reports = %+v, want several ending in Done with documents indexed", reports)
	}
	// Rebuilding one app, and one user, of an index that has them already.
	if err := live.Rebuild(t.Context(), sessions, "app", ""); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, "after rebuilding one app", answers(t, live), want)
	if err := live.Rebuild(t.Context(), sessions, "app", "alice"); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, "after rebuilding one user", answers(t, live), want)
	if err := live.Rebuild(t.Context(), sessions, "", "alice"); err == nil {
		t.Error("Rebuild of a user without an app: no error")
	}
}

func testRebuildCancelled(t *testing.T, newIndex Factory) {
	sessions := session.NewInMemoryService()
	ctx, cancel := context.WithCancel(t.Context())
	idx := newIndex(t, index.WithProgress(func(index.Progress) { cancel() }))
	fill(t, sessions, idx)
	want := answers(t, idx)
	for _, scope := range [][2]string{{"", ""}, {"app", "alice"}} {
		err := idx.Rebuild(ctx, sessions, scope[0], scope[1])
		if err == nil || !strings.Contains(err.Error(), "unchanged") {
			t.Errorf("cancelled rebuild of %q: error %v, want one saying the old index is unchanged", scope, err)
		}
		sameAnswers(t, "after a cancelled rebuild", answers(t, idx), want)
	}
}

func testCatchUp(t *testing.T, newIndex Factory) {
	sessions := session.NewInMemoryService()
	reference := newIndex(t)
	byOwner := fill(t, sessions, reference)

	idx := newIndex(t) // was down the whole time
	if err := idx.CatchUp(t.Context(), sessions); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, "after catching up from nothing", answers(t, idx), answers(t, reference))

	// More happens while it is down again: an append and a deletion.
	s := byOwner[[2]string{"app", "bob"}][1]
	if err := sessions.AppendEvent(t.Context(), s, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "zeppelin tickets")}); err != nil {
		t.Fatal(err)
	}
	if err := sessions.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "alice", SessionID: "app-alice-s0"}); err != nil {
		t.Fatal(err)
	}
	if err := idx.CatchUp(t.Context(), sessions); err != nil {
		t.Fatal(err)
	}
	if rs := search(t, idx, "app", "bob", "zeppelin", 5); len(rs) == 0 || rs[0].Content != "zeppelin tickets" {
		t.Errorf("caught-up index finds %q for the new event", contents(rs))
	}
	for _, r := range search(t, idx, "app", "alice", "dog peanuts park", 10) {
		if r.SessionID == "app-alice-s0" {
			t.Errorf("caught-up index still has the deleted session's %q", r.Content)
		}
	}
}

func testPersistence(t *testing.T, newIndex Factory, kept persistence) {
	sessions := session.NewInMemoryService()
	path := filepath.Join(t.TempDir(), kept.file)
	quiet := index.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	idx := newIndex(t, kept.option(path), quiet)
	if ip, ok := idx.(interface{ InProcess() bool }); !ok || !ip.InProcess() {
		t.Skip("n/a: the index lives in an external store, not in a snapshot")
	}
	if !idx.IsPersisted() {
		t.Fatal("an index with a snapshot says it is not persisted")
	}
	fill(t, sessions, idx)
	if err := idx.CatchUp(t.Context(), sessions); err != nil {
		t.Fatal(err)
	}
	want := answers(t, idx)
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}

	reopened := newIndex(t, kept.option(path), quiet)
	sameAnswers(t, "reopened from the snapshot", answers(t, reopened), want)

	// What happened while it was closed is caught up when it opens with the sessions.
	if err := sessions.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "bob", SessionID: "app-bob-s1"}); err != nil {
		t.Fatal(err)
	}
	if err := reopened.Close(); err != nil {
		t.Fatal(err)
	}
	caughtUp := newIndex(t, kept.option(path), index.WithSessions(sessions), quiet)
	for _, r := range search(t, caughtUp, "app", "bob", "Lisbon flight", 10) {
		if r.SessionID == "app-bob-s1" {
			t.Errorf("reopened with the sessions, the index still has the session deleted while it was closed: %q", r.Content)
		}
	}
	want = answers(t, caughtUp)

	// Damage the snapshot: the index starts empty, says so, and CatchUp restores it.
	if err := caughtUp.Close(); err != nil {
		t.Fatal(err)
	}
	kept.damage(t, path)
	var logs bytes.Buffer
	damaged := newIndex(t, kept.option(path), index.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if rs := search(t, damaged, "app", "alice", "dog", 5); len(rs) != 0 {
		t.Errorf("a damaged snapshot was read: %q", contents(rs))
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "damaged") {
		t.Errorf("a damaged snapshot was not logged as such: %s", logs.String())
	}
	if err := damaged.CatchUp(t.Context(), sessions); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, "rebuilt after a damaged snapshot", answers(t, damaged), want)

	// Deleted entirely: the same.
	os.Remove(path)
	missing := newIndex(t, kept.option(path), quiet)
	if err := missing.CatchUp(t.Context(), sessions); err != nil {
		t.Fatal(err)
	}
	sameAnswers(t, "rebuilt after a deleted snapshot", answers(t, missing), want)
}

// Text an SDK caller or a client may append that some store cannot hold
// (PostgreSQL refuses U+0000; an engine may refuse invalid UTF-8) is
// indexed by its words, through Index and through the follower alike.
func testTextStoresCannotHold(t *testing.T, newIndex Factory) {
	sessions := session.NewInMemoryService()
	idx := newIndex(t)
	s := appendText(t, sessions, "app", "u", "s", "the zeppelin\x00leaves at noon")
	if err := idx.Index(t.Context(), s); err != nil {
		t.Fatalf("indexing text holding U+0000: %v", err)
	}
	appendText(t, sessions, "app", "u", "s2", "tickets \xff\xfe for the zeppelin")
	if err := idx.CatchUp(t.Context(), sessions); err != nil {
		t.Fatalf("following text holding invalid UTF-8: %v", err)
	}
	assertNoLag(t, idx, sessions)
	rs := search(t, idx, "app", "u", "zeppelin leaves tickets", 5)
	if len(rs) != 2 {
		t.Fatalf("found %q, want both events", contents(rs))
	}
	for _, r := range rs {
		if strings.ContainsRune(r.Content, 0) || !utf8.ValidString(r.Content) {
			t.Errorf("a result's content %q holds what a client cannot decode", r.Content)
		}
	}
}
