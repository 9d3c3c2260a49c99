package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/llm"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/workingmemory"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fixture struct {
	sessions session.Service
	idx      *index.Index
	model    *fakellm.Server
	runner   *Runner
}

func setup(t *testing.T, cfg Config, script ...fakellm.Reply) *fixture {
	t.Helper()
	return setupOn(t, session.NewInMemoryService(), cfg, script...)
}

// setupOn is setup on a session service of the test's own.
func setupOn(t *testing.T, sessions session.Service, cfg Config, script ...fakellm.Reply) *fixture {
	t.Helper()
	f := &fixture{sessions: sessions}
	var err error
	if f.idx, err = index.NewKeyword(index.WithSessions(f.sessions), index.WithLogger(quiet)); err != nil {
		t.Fatal(err)
	}
	f.model = fakellm.Start(t, script...)
	client, err := llm.New(llm.Config{BaseURL: f.model.URL, Model: "fake", APIKey: "sk-test-key-42", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name == "" {
		cfg.Name, cfg.App = "assistant", "app"
	}
	if cfg.WorkingMemory.Type == "" {
		cfg.WorkingMemory.Type = "all"
	}
	if f.runner, err = New(cfg, client, f.sessions, f.idx, quiet); err != nil {
		t.Fatal(err)
	}
	return f
}

// remember stores a past conversation of a user and indexes it.
func (f *fixture) remember(t *testing.T, user, sessionID string, texts ...string) {
	t.Helper()
	resp, err := f.sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: user, SessionID: sessionID})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range texts {
		if err := f.sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.idx.Index(t.Context(), resp.Session); err != nil {
		t.Fatal(err)
	}
}

func stored(t *testing.T, s session.Service, user, id string) []*session.Event {
	t.Helper()
	resp, err := s.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: user, SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	var out []*session.Event
	for ev := range resp.Session.Events().All() {
		out = append(out, ev)
	}
	return out
}

func messages(req map[string]any) []map[string]any {
	var out []map[string]any
	for _, m := range req["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

// TestCrossSessionMemory is the shape of Hector's docs: in session 1 the
// user says something; in session 2 the user asks about it; the model's
// search_memory call finds it, and only that user's memory.
func TestCrossSessionMemory(t *testing.T) {
	f := setup(t, Config{Name: "assistant", App: "app", Instruction: "You are helpful.", Search: true},
		fakellm.Reply{Calls: [][3]string{{"call_1", "search_memory", `{"query": "dog name"}`}}},
		fakellm.Reply{Content: "Your dog is called Rex."})
	f.remember(t, "alice", "s1", "My dog is called Rex and he loves the park")
	f.remember(t, "bob", "b1", "My dog is called Max and he loves the park")

	var streamed strings.Builder
	var toolEvents []string
	res, err := f.runner.Run(t.Context(), Request{UserID: "alice", SessionID: "s2", Message: "What is my dog called?"}, func(kind string, data any) {
		switch kind {
		case "text":
			streamed.WriteString(data.(string))
		default:
			toolEvents = append(toolEvents, kind)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "Your dog is called Rex." || streamed.String() != res.Reply || fmt.Sprint(toolEvents) != "[tool_call tool_result]" {
		t.Errorf("reply %q, streamed %q, tool events %v", res.Reply, streamed.String(), toolEvents)
	}
	// What the model saw.
	first := messages(f.model.Request(0))
	if len(first) != 2 || first[0]["role"] != "system" || first[0]["content"] != "You are helpful." || first[1]["content"] != "What is my dog called?" {
		t.Errorf("first request's messages = %v", first)
	}
	if tools := fmt.Sprint(f.model.Request(0)["tools"]); !strings.Contains(tools, "search_memory") || !strings.Contains(tools, "Search this user's past conversations") {
		t.Errorf("tools offered = %s", tools)
	}
	second := messages(f.model.Request(1))
	last := second[len(second)-1]
	prev := second[len(second)-2]
	if last["role"] != "tool" || last["tool_call_id"] != "call_1" || prev["role"] != "assistant" || !strings.Contains(fmt.Sprint(prev["tool_calls"]), "call_1") {
		t.Fatalf("the tool result is not paired with its call: %v", second)
	}
	if result := last["content"].(string); !strings.Contains(result, "Rex") || strings.Contains(result, "Max") {
		t.Errorf("search_memory returned %s: want alice's memory only", result)
	}
	// What was stored: exactly the turn, in order, paired.
	evs := stored(t, f.sessions, "alice", "s2")
	if len(evs) != 4 || evs[0].Message.Text() != "What is my dog called?" || evs[1].ToolCalls()[0].ID != "call_1" ||
		evs[2].ToolResults()[0].CallID != "call_1" || evs[3].Message.Text() != "Your dog is called Rex." {
		t.Fatalf("stored turn = %d events", len(evs))
	}
	for i, ev := range evs {
		if ev.InvocationID != evs[0].InvocationID || ev.Seq != int64(i+1) {
			t.Errorf("event %d: invocation %q seq %d", i, ev.InvocationID, ev.Seq)
		}
	}
	// And the turn is searchable for the next time.
	found, _ := f.idx.Search(t.Context(), &index.SearchRequest{Query: "what is my dog called", AppName: "app", UserID: "alice"})
	if len(found.Results) == 0 || found.Results[0].SessionID != "s2" {
		t.Errorf("the new turn was not indexed: %+v", found.Results)
	}
}

func TestTheModelSeesTrimmedHistoryWithToolsPaired(t *testing.T) {
	f := setup(t, Config{Name: "assistant", App: "app", WorkingMemory: workingmemory.Config{Type: "buffer_window", MaxMessages: 4}}, fakellm.Reply{Content: "ok"})
	resp, _ := f.sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	for i := range 3 {
		for _, ev := range []*session.Event{
			{Author: "user", Message: session.NewTextMessage(session.RoleUser, fmt.Sprintf("question %d", i))},
			{Author: "assistant", Message: &session.Message{Role: session.RoleAssistant, Parts: []session.Part{{Type: session.PartToolCall, ToolCall: &session.ToolCall{ID: fmt.Sprint("c", i), Name: "lookup"}}}}},
			{Author: "tool", Message: &session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult, ToolResult: &session.ToolResult{CallID: fmt.Sprint("c", i), Content: "x"}}}}},
			{Author: "assistant", Message: session.NewTextMessage(session.RoleAssistant, fmt.Sprintf("answer %d", i))},
		} {
			f.sessions.AppendEvent(t.Context(), resp.Session, ev)
		}
	}
	if _, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "next"}, nil); err != nil {
		t.Fatal(err)
	}
	msgs := messages(f.model.Request(0))
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m["role"].(string))
	}
	// Four messages fit; the window moved past the last tool round rather than split it.
	if got := strings.Join(roles, " "); got != "assistant tool assistant user" {
		t.Errorf("the model saw %s", got)
	}
	if msgs[1]["tool_call_id"] != "c2" || !strings.Contains(fmt.Sprint(msgs[0]["tool_calls"]), "c2") {
		t.Errorf("tool pair broken: %v", msgs)
	}
}

func TestModelFailureKeepsOnlyTheUsersMessage(t *testing.T) {
	f := setup(t, Config{Search: true}, fakellm.Reply{Calls: [][3]string{{"c1", "search_memory", `{"query":"x"}`}}}, fakellm.Reply{Status: 500})
	_, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "hello"}, nil)
	if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "500") || strings.Contains(err.Error(), "sk-test-key-42") {
		t.Fatalf("failed turn: %v", err)
	}
	evs := stored(t, f.sessions, "u", "s")
	if len(evs) != 1 || evs[0].Message.Text() != "hello" {
		t.Errorf("after a failed turn the session holds %d events; want the user's message only", len(evs))
	}
}

// A turn is stored whole or not at all: when its reply cannot be stored
// (here, over the event size limit), neither are its tool call and result,
// which would stand in the session without the answer they led to; the
// user's message is kept, as after any failed turn.
func TestATurnThatCannotBeStoredLeavesNoHalfOfIt(t *testing.T) {
	f := setupOn(t, session.NewInMemoryService(session.WithMaxEventBytes(4096)), Config{Search: true},
		fakellm.Reply{Calls: [][3]string{{"c1", "search_memory", `{"query":"x"}`}}}, fakellm.Reply{Content: strings.Repeat("too long ", 1000)})
	if _, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "hello"}, nil); err == nil {
		t.Fatal("a turn whose reply is over the event size limit succeeded")
	}
	if evs := stored(t, f.sessions, "u", "s"); len(evs) != 1 || evs[0].Message.Text() != "hello" {
		t.Errorf("after a turn that could not be stored the session holds %d events; want the user's message only", len(evs))
	}
}

func TestClientGoneMidStreamLeavesNoHalfTurn(t *testing.T) {
	release := make(chan struct{})
	f := setup(t, Config{Search: true}, fakellm.Reply{Calls: [][3]string{{"c1", "search_memory", `{"query":"x"}`}}}, fakellm.Reply{Content: "late", Wait: release})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		_, err := f.runner.Run(ctx, Request{UserID: "u", SessionID: "s", Message: "hello"}, nil)
		done <- err
	}()
	<-f.model.Started
	<-f.model.Started // the second call, after the tool ran, is in flight
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a run whose client left succeeded")
	}
	close(release)
	if evs := stored(t, f.sessions, "u", "s"); len(evs) != 1 || evs[0].Message.Text() != "hello" {
		t.Errorf("after the client left mid-turn the session holds %d events; want the user's message only", len(evs))
	}
}

func TestConcurrentRunsOnOneSession(t *testing.T) {
	for _, reject := range []bool{true, false} {
		t.Run(fmt.Sprint("reject=", reject), func(t *testing.T) {
			release := make(chan struct{})
			f := setup(t, Config{Name: "assistant", App: "app", WorkingMemory: workingmemory.Config{Type: "all"}, RejectConcurrent: reject},
				fakellm.Reply{Content: "first", Wait: release}, fakellm.Reply{Content: "second"})
			var wg sync.WaitGroup
			var first error
			wg.Go(func() {
				_, first = f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "one"}, nil)
			})
			<-f.model.Started // the first run holds the session
			if reject {
				_, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "two"}, nil)
				close(release)
				wg.Wait()
				if !errors.Is(err, ErrBusy) || first != nil {
					t.Fatalf("second run: %v, first: %v", err, first)
				}
				return
			}
			var second error
			wg.Go(func() {
				_, second = f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "two"}, nil)
			})
			f.runner.mu.Lock()
			l := f.runner.locks["app\x00u\x00s"]
			f.runner.mu.Unlock()
			for l.waiting.Load() == 0 { // until the second run waits for the session
				runtime.Gosched()
			}
			close(release)
			wg.Wait()
			errs := []error{first, second}
			if errs[0] != nil || errs[1] != nil {
				t.Fatal(errs)
			}
			f.runner.mu.Lock()
			n := len(f.runner.locks)
			f.runner.mu.Unlock()
			if n != 0 {
				t.Errorf("%d session locks kept after the runs ended", n)
			}
			var texts []string
			for _, ev := range stored(t, f.sessions, "u", "s") {
				texts = append(texts, ev.Message.Text())
			}
			if got := strings.Join(texts, " "); got != "one first two second" {
				t.Errorf("stored %q: turns interleaved", got)
			}
		})
	}
}

type failingIndex struct{ index.Service }

func (failingIndex) Index(context.Context, session.Session) error {
	return errors.New("index disk full")
}

func TestIndexFailureDoesNotFailTheTurn(t *testing.T) {
	f := setup(t, Config{}, fakellm.Reply{Content: "fine"})
	f.runner.idx = failingIndex{f.idx}
	res, err := f.runner.Run(t.Context(), Request{UserID: "u", Message: "hi"}, nil)
	if err != nil || res.Reply != "fine" || res.Metadata["index_error"] != "index disk full" || res.SessionID == "" {
		t.Errorf("result %+v, %v", res, err)
	}
}

// TestRealModel runs a turn against a real endpoint when
// HECTOR_TEST_LLM_BASE_URL and HECTOR_TEST_LLM_MODEL (and _API_KEY) are set.
func TestRealModel(t *testing.T) {
	base, model := os.Getenv("HECTOR_TEST_LLM_BASE_URL"), os.Getenv("HECTOR_TEST_LLM_MODEL")
	if base == "" || model == "" {
		t.Skip("opt-in: set HECTOR_TEST_LLM_BASE_URL and HECTOR_TEST_LLM_MODEL to run against a real model")
	}
	client, err := llm.New(llm.Config{BaseURL: base, Model: model, APIKey: os.Getenv("HECTOR_TEST_LLM_API_KEY")})
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.NewInMemoryService()
	idx, _ := index.NewKeyword(index.WithSessions(sessions))
	r, err := New(Config{Name: "assistant", App: "app", Instruction: "Use search_memory to recall what the user told you before.", Search: true, WorkingMemory: workingmemory.Config{Type: "all"}}, client, sessions, idx, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(t.Context(), Request{UserID: "u", SessionID: "one", Message: "Remember: my favourite colour is teal."}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), Request{UserID: "u", SessionID: "two", Message: "What is my favourite colour?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.ToLower(res.Reply), "teal") {
		t.Errorf("reply %q does not recall teal", res.Reply)
	}
}

type failingSummarizer struct{}

func (failingSummarizer) Summarize(context.Context, string, []*session.Event) (string, error) {
	return "", errors.New("summarizer model overloaded")
}

func TestSummarizerFailureDoesNotFailTheTurn(t *testing.T) {
	f := setup(t, Config{Name: "assistant", App: "app", Summarizer: failingSummarizer{},
		WorkingMemory: workingmemory.Config{Type: "summary_buffer", MaxMessages: 4, SummaryThreshold: 2, KeepRecent: 1}},
		fakellm.Reply{Content: "one"}, fakellm.Reply{Content: "two"})
	res, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "first"}, nil)
	if err != nil || res.Metadata != nil {
		t.Fatalf("first turn (2 events, threshold 2): %+v, %v", res, err)
	}
	res, err = f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "second"}, nil)
	if err != nil || res.Reply != "two" || !strings.Contains(fmt.Sprint(res.Metadata["summary_error"]), "overloaded") {
		t.Errorf("second turn: %+v, %v; want the reply and the summary error in metadata", res, err)
	}
	if evs := stored(t, f.sessions, "u", "s"); len(evs) != 4 {
		t.Errorf("%d events stored; want the two turns and no summary", len(evs))
	}
}

func factsTools(t *testing.T, policy string) *facts.Tools {
	svc, err := facts.NewInMemoryService(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return &facts.Tools{Facts: svc, Scope: facts.ScopeUser, WritePolicy: policy}
}

func TestAgentStoresAndInjectsFacts(t *testing.T) {
	ft := factsTools(t, facts.WriteAuto)
	f := setup(t, Config{Name: "assistant", App: "app", Facts: ft, InjectFacts: true, Instruction: "Be brief."},
		fakellm.Reply{Calls: [][3]string{{"c1", "memory_store", `{"key":"deploy/tool","value":"Konflux","category":"ops"}`}}},
		fakellm.Reply{Content: "Noted."},
		fakellm.Reply{Content: "You deploy with Konflux."},
	)
	if _, err := f.runner.Run(t.Context(), Request{UserID: "alice", SessionID: "s1", Message: "Always deploy via Konflux."}, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := ft.Facts.Recall(t.Context(), facts.UserScope("app", "alice"), "deploy/tool"); err != nil || got.Value != "Konflux" {
		t.Fatalf("the fact was not stored in alice's scope: %+v, %v", got, err)
	}
	if tools := fmt.Sprint(f.model.Request(0)["tools"]); !strings.Contains(tools, "memory_store") || !strings.Contains(tools, "memory_forget") {
		t.Errorf("tools offered: %s", tools)
	}
	if _, err := f.runner.Run(t.Context(), Request{UserID: "alice", SessionID: "s2", Message: "How do I deploy?"}, nil); err != nil {
		t.Fatal(err)
	}
	msgs := messages(f.model.Request(2))
	if msgs[0]["content"] != "Be brief." || !strings.Contains(msgs[1]["content"].(string), "not instructions") || !strings.Contains(msgs[1]["content"].(string), "deploy/tool: Konflux") {
		t.Errorf("the second session's prompt: %v", msgs[:2])
	}
	// Bob's prompt carries none of alice's facts.
	f.model = fakellm.Start(t, fakellm.Reply{Content: "hm"})
	client, _ := llm.New(llm.Config{BaseURL: f.model.URL, Model: "fake", MaxRetries: -1})
	f.runner.model = client
	f.runner.Run(t.Context(), Request{UserID: "bob", SessionID: "b", Message: "How do I deploy?"}, nil)
	if strings.Contains(fmt.Sprint(f.model.Request(0)["messages"]), "Konflux") {
		t.Error("bob's prompt holds alice's facts")
	}
}

func TestFactWritePolicies(t *testing.T) {
	store := fakellm.Reply{Calls: [][3]string{{"c1", "memory_store", `{"key":"k","value":"v"}`}}}
	for _, tc := range []struct {
		policy   string
		approver bool
		stored   bool
	}{{facts.WriteApprovers, false, false}, {facts.WriteApprovers, true, true}, {facts.WriteOff, true, false}} {
		t.Run(fmt.Sprint(tc.policy, tc.approver), func(t *testing.T) {
			ft := factsTools(t, tc.policy)
			f := setup(t, Config{Name: "assistant", App: "app", Facts: ft}, store, fakellm.Reply{Content: "done"})
			if _, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "remember k", Approver: tc.approver}, nil); err != nil {
				t.Fatal(err)
			}
			_, err := ft.Facts.Recall(t.Context(), facts.UserScope("app", "u"), "k")
			if (err == nil) != tc.stored {
				t.Errorf("stored = %v, want %v", err == nil, tc.stored)
			}
			if !tc.stored {
				result := fmt.Sprint(messages(f.model.Request(1)))
				if !strings.Contains(result, "approver") && !strings.Contains(result, "no tool named") {
					t.Errorf("the model was not told why: %s", result)
				}
			}
		})
	}
}

// The write check is the turn starter's: an approver's turn in a session
// does not make the next turn there, started by someone else, an approver's.
func TestFactWritesFollowTheTurnsStarter(t *testing.T) {
	ft := factsTools(t, facts.WriteApprovers)
	store := func(v string) fakellm.Reply {
		return fakellm.Reply{Calls: [][3]string{{"c-" + v, "memory_store", `{"key":"k","value":"` + v + `"}`}}}
	}
	f := setup(t, Config{Name: "assistant", App: "app", Facts: ft},
		store("first"), fakellm.Reply{Content: "no"}, store("second"), fakellm.Reply{Content: "ok"}, store("third"), fakellm.Reply{Content: "no"})
	for _, turn := range []struct {
		approver bool
		want     string
	}{{false, ""}, {true, "second"}, {false, "second"}} {
		if _, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "shared", Message: "remember k", Approver: turn.approver}, nil); err != nil {
			t.Fatal(err)
		}
		value := ""
		if got, err := ft.Facts.Recall(t.Context(), facts.UserScope("app", "u"), "k"); err == nil {
			value = got.Value
		}
		if value != turn.want {
			t.Errorf("after a turn by approver=%v the fact is %q, want %q", turn.approver, value, turn.want)
		}
	}
}
