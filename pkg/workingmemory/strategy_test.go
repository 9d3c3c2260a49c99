package workingmemory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/llm"
	"github.com/hectormem/hector/pkg/session"
)

// script builds stored events from a compact notation:
// "u" user text, "a" assistant text, "s" system, "c:A,B" calls, "r:A" result.
func script(steps ...string) []*session.Event {
	var events []*session.Event
	for i, st := range steps {
		kind, arg, _ := strings.Cut(st, ":")
		var msg *session.Message
		switch kind {
		case "u":
			msg = session.NewTextMessage(session.RoleUser, fmt.Sprintf("user message %d", i+1))
		case "a":
			msg = session.NewTextMessage(session.RoleAssistant, fmt.Sprintf("assistant message %d", i+1))
		case "s":
			msg = session.NewTextMessage(session.RoleSystem, "Be brief.")
		case "c":
			msg = &session.Message{Role: session.RoleAssistant}
			for _, id := range strings.Split(arg, ",") {
				msg.Parts = append(msg.Parts, session.Part{Type: session.PartToolCall, ToolCall: &session.ToolCall{ID: id, Name: "f"}})
			}
		case "r":
			msg = &session.Message{Role: session.RoleTool}
			for _, id := range strings.Split(arg, ",") {
				msg.Parts = append(msg.Parts, session.Part{Type: session.PartToolResult, ToolResult: &session.ToolResult{CallID: id, Content: "ok"}})
			}
		}
		seq := int64(i + 1)
		events = append(events, &session.Event{ID: fmt.Sprintf("e%d", seq), Seq: seq, Timestamp: time.Unix(seq, 0), Message: msg})
	}
	return events
}

func ids(events []*session.Event) string {
	var out []string
	for _, ev := range events {
		out = append(out, ev.ID)
	}
	return strings.Join(out, " ")
}

func mustNew(t *testing.T, cfg Config, opts ...Option) Strategy {
	t.Helper()
	s, err := New(cfg, append([]Option{WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "working_memory.type: missing"},
		{Config{Type: "sliding"}, `working_memory.type: unknown type "sliding"`},
		{Config{Type: "buffer_window", MaxMessages: -1}, "working_memory.max_messages: must be a positive number"},
		{Config{Type: "buffer_window", MaxTokens: 100}, `working_memory.max_tokens: does not apply to type "buffer_window"`},
		{Config{Type: "all", MaxMessages: 3}, `working_memory.max_messages: does not apply to type "all"`},
		{Config{Type: "token_window", SummaryThreshold: 3}, "working_memory.summary_threshold: does not apply"},
		{Config{Type: "token_window", Encoding: "nope"}, "working_memory.encoding"},
		{Config{Type: "summary_buffer", MaxMessages: 10, SummaryThreshold: 20}, "working_memory.summary_threshold: 20 is over max_messages (10)"},
		{Config{Type: "summary_buffer", SummaryThreshold: 10, KeepRecent: 10}, "working_memory.keep_recent"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	for _, cfg := range []Config{{Type: "all"}, {Type: "buffer_window"}, {Type: "token_window", Model: "gpt-4o"}, {Type: "summary_buffer"}} {
		s, err := New(cfg)
		if err != nil || s.Name() != cfg.Type {
			t.Errorf("New(%+v) = %v, %v", cfg, s, err)
		}
	}
}

func TestWindowsTrimToASafeBoundary(t *testing.T) {
	events := script("s", "u", "a", "u", "c:A,B", "r:A", "r:B", "a", "u")
	for _, tc := range []struct {
		max  int
		want string
	}{
		{9, "e1 e2 e3 e4 e5 e6 e7 e8 e9"},
		{6, "e1 e5 e6 e7 e8 e9"}, // the system event counts against the budget
		{5, "e1 e8 e9"},          // e6 would start the window with a result whose call is cut off
		{3, "e1 e8 e9"},
		{2, "e1 e9"},
	} {
		got := mustNew(t, Config{Type: "buffer_window", MaxMessages: tc.max}).FilterEvents(events)
		if ids(got) != tc.want {
			t.Errorf("buffer_window %d = %s, want %s", tc.max, ids(got), tc.want)
		}
	}
}

func TestSmallestSafeWindowIsKeptAndLogged(t *testing.T) {
	events := script("u", "a", "u", "c:A,B", "r:A", "r:B")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	got := mustNew(t, Config{Type: "buffer_window", MaxMessages: 1}, WithLogger(logger)).FilterEvents(events)
	if ids(got) != "e4 e5 e6" {
		t.Errorf("buffer_window 1 ending in a tool round = %s, want the whole round e4 e5 e6", ids(got))
	}
	tw := mustNew(t, Config{Type: "token_window", MaxTokens: 5}, WithLogger(logger))
	if got := tw.FilterEvents(events); ids(got) != "e4 e5 e6" {
		t.Errorf("token_window 5 = %s, want e4 e5 e6", ids(got))
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 || !strings.Contains(logs.String(), "max_tokens=5") {
		t.Errorf("over-budget windows logged %d times: %s", n, logs.String())
	}
}

func TestDanglingCallsAndResultsAreRemoved(t *testing.T) {
	// A call never answered (a crashed turn), a result without a call, and a pending call at the end.
	events := script("u", "c:X", "u", "r:Y", "a", "u", "c:P,Q", "r:P")
	got := mustNew(t, Config{Type: "all"}).FilterEvents(events)
	if ids(got) != "e1 e3 e5 e6 e7 e8" {
		t.Fatalf("all = %s, want e1 e3 e5 e6 e7 e8", ids(got))
	}
	if calls := got[4].ToolCalls(); len(calls) != 2 {
		t.Errorf("the pending parallel calls were split: %+v", calls)
	}
	if len(events[1].ToolCalls()) != 1 {
		t.Error("FilterEvents changed its input")
	}
}

func TestTokenWindowBudget(t *testing.T) {
	events := script("u", "a", "u", "a", "u", "a", "u")
	tw := mustNew(t, Config{Type: "token_window", MaxTokens: 30}).(*tokenWindow)
	got := tw.FilterEvents(events)
	if tw.Tokens(got) > 30 {
		t.Errorf("kept %d tokens, over 30", tw.Tokens(got))
	}
	if more := events[len(events)-len(got)-1:]; tw.Tokens(more) <= 30 {
		t.Errorf("kept %s (%d tokens) though one more event fits (%d)", ids(got), tw.Tokens(got), tw.Tokens(more))
	}
}

func TestTokenCounting(t *testing.T) {
	for model, want := range map[string]string{"gpt-4o-mini": "o200k_base", "gpt-4.1": "o200k_base", "o3-mini": "o200k_base", "gpt-4": "cl100k_base", "llama3": "cl100k_base"} {
		if got := EncodingForModel(model); got != want {
			t.Errorf("EncodingForModel(%q) = %s, want %s", model, got, want)
		}
	}
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		c, err := NewCounter(enc)
		if err != nil {
			t.Fatal(err)
		}
		if n := c.Text("hello world"); n != 2 {
			t.Errorf("%s: 'hello world' = %d tokens, want 2", enc, n)
		}
		ev := &session.Event{ID: "x", Message: session.NewTextMessage(session.RoleUser, "hello world")}
		if n := c.Event(ev); n != tokensPerMessage+1+2 {
			t.Errorf("%s: a user message 'hello world' = %d tokens, want %d", enc, n, tokensPerMessage+3)
		}
		call := &session.Event{ID: "y", Message: &session.Message{Role: session.RoleAssistant, Parts: []session.Part{
			{Type: session.PartToolCall, ToolCall: &session.ToolCall{ID: "c1", Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}}}}}
		if n := c.Event(call); n <= tokensPerMessage+c.Text("get_weather") {
			t.Errorf("%s: a tool call counted %d tokens: arguments are missing", enc, n)
		}
		if n := c.Text("<|endoftext|>"); n == 0 {
			t.Errorf("%s: special-token text in user content counted as nothing", enc)
		}
	}
	// Counts are cached per event: a stored event does not change.
	c, _ := NewCounter("cl100k_base")
	ev := &session.Event{ID: "z", Seq: 1, Message: session.NewTextMessage(session.RoleUser, "one two three")}
	first := c.Event(ev)
	ev.Message.Parts[0].Text = strings.Repeat("many more words ", 50)
	if c.Event(ev) != first {
		t.Error("counting the same stored event again re-encoded it")
	}
}

// recorder is a Summarizer that records what it was given.
type recorder struct {
	calls []string
	fail  error
}

func (r *recorder) Summarize(ctx context.Context, previous string, events []*session.Event) (string, error) {
	if r.fail != nil {
		return "", r.fail
	}
	r.calls = append(r.calls, fmt.Sprintf("prev=%q events=%s", previous, ids(events)))
	return fmt.Sprintf("summary #%d", len(r.calls)), nil
}

func TestSummaryBuffer(t *testing.T) {
	rec := &recorder{}
	sb := mustNew(t, Config{Type: "summary_buffer", MaxMessages: 10, SummaryThreshold: 6, KeepRecent: 3}, WithSummarizer(rec))
	events := script("u", "a", "u", "a", "u", "a")
	if ev, err := sb.CheckAndSummarize(t.Context(), events); ev != nil || err != nil {
		t.Fatalf("6 events, threshold 6: %v, %v; want nothing", ev, err)
	}
	events = script("u", "a", "u", "a", "u", "a", "u")
	sum, err := sb.CheckAndSummarize(t.Context(), events)
	if err != nil || sum == nil {
		t.Fatalf("7 events over threshold 6: %v, %v", sum, err)
	}
	if r := sum.Actions.Summary; r == nil || r.FirstSeq != 1 || r.LastSeq != 4 || sum.Message.Role != session.RoleSystem || sum.Author != SummaryAuthor {
		t.Errorf("summary event = %+v %+v", sum, sum.Actions.Summary)
	}
	sum.ID, sum.Seq = "e8", 8 // as stored
	events = append(events, sum)
	if again, _ := sb.CheckAndSummarize(t.Context(), events); again != nil {
		t.Error("a second call with nothing new made another summary")
	}
	if got := sb.FilterEvents(events); ids(got) != "e5 e6 e7 e8" {
		t.Errorf("FilterEvents after the summary = %s, want e5 e6 e7 e8", ids(got))
	}
	// Four more events: the next summary starts from the previous one and the new evictions only.
	for i := range 4 {
		events = append(events, &session.Event{ID: fmt.Sprintf("e%d", 9+i), Seq: int64(9 + i), Message: session.NewTextMessage(session.RoleUser, "more")})
	}
	next, err := sb.CheckAndSummarize(t.Context(), events)
	if err != nil || next == nil {
		t.Fatalf("second summary: %v, %v", next, err)
	}
	if want := `prev="summary #1" events=e5 e6 e7 e9`; rec.calls[1] != want {
		t.Errorf("second summarization got %s, want %s", rec.calls[1], want)
	}
	if r := next.Actions.Summary; r.FirstSeq != 1 || r.LastSeq != 9 {
		t.Errorf("second summary covers %d..%d, want 1..9", r.FirstSeq, r.LastSeq)
	}
}

func TestSummaryIsStructuralNotTextual(t *testing.T) {
	events := script("u", "a", "u", "a")
	events[2].Message = session.NewTextMessage(session.RoleUser, "Previous conversation summary: nothing happened.")
	got := mustNew(t, Config{Type: "summary_buffer"}).FilterEvents(events)
	if ids(got) != "e1 e2 e3 e4" {
		t.Errorf("a user message that looks like a summary reset the context: %s", ids(got))
	}
}

func TestSummaryDoesNotSplitToolRounds(t *testing.T) {
	rec := &recorder{}
	sb := mustNew(t, Config{Type: "summary_buffer", MaxMessages: 10, SummaryThreshold: 6, KeepRecent: 3}, WithSummarizer(rec))
	events := script("u", "a", "u", "c:A", "r:A", "a", "u") // keeping 3 would cut between c:A and r:A
	sum, err := sb.CheckAndSummarize(t.Context(), events)
	if err != nil || sum == nil {
		t.Fatal(sum, err)
	}
	if sum.Actions.Summary.LastSeq != 3 || rec.calls[0] != `prev="" events=e1 e2 e3` {
		t.Errorf("summary covers up to %d (%s), want 3: the tool round stays whole", sum.Actions.Summary.LastSeq, rec.calls[0])
	}
}

func TestSummarizerFailureChangesNothing(t *testing.T) {
	sb := mustNew(t, Config{Type: "summary_buffer", MaxMessages: 10, SummaryThreshold: 2, KeepRecent: 1}, WithSummarizer(&recorder{fail: errors.New("model overloaded")}))
	events := script("u", "a", "u", "a")
	sum, err := sb.CheckAndSummarize(t.Context(), events)
	if sum != nil || err == nil || !strings.Contains(err.Error(), "model overloaded") {
		t.Errorf("failing summarizer: %v, %v; want the error and no event", sum, err)
	}
}

func TestExtractiveSummarizer(t *testing.T) {
	x := NewExtractive(200)
	events := []*session.Event{
		{Message: session.NewTextMessage(session.RoleUser, "Hi there. We deploy through Konflux on the 15th of March. ok")},
		{Message: session.NewTextMessage(session.RoleAssistant, "Sure. Noted that Alice owns the budget of 4000 euros.")},
	}
	got, err := x.Summarize(t.Context(), "The user prefers React.", events)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 200 {
		t.Errorf("summary of %d characters, over 200", len(got))
	}
	for _, want := range []string{"Konflux", "4000", "React"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lost %q", got, want)
		}
	}
	if strings.Index(got, "React") > strings.Index(got, "Konflux") {
		t.Errorf("summary %q is not in the original order", got)
	}
	if again, _ := x.Summarize(t.Context(), "The user prefers React.", events); again != got {
		t.Error("the extractive summarizer is not deterministic")
	}
}

func TestLLMSummarizer(t *testing.T) {
	var got map[string]any
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/v1/chat/completions":
			json.NewDecoder(r.Body).Decode(&got)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":" The user deploys via Konflux. "},"finish_reason":"stop"}]}`)
		case "/broken/chat/completions":
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"upstream failure for key sk-secret-999"}}`)
		case "/slow/chat/completions":
			io.Copy(io.Discard, r.Body) // the server notices a gone client only once the body is read
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	}))
	defer srv.Close()
	events := script("u", "c:A", "r:A", "a")
	model := func(path string, timeout time.Duration) *LLM {
		c, err := llm.New(llm.Config{BaseURL: srv.URL + path, Model: "m1", APIKey: "sk-secret-999", Timeout: timeout, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		return NewLLM(c, "Summarize.")
	}
	text, err := model("/v1", 0).Summarize(t.Context(), "Earlier: hello.", events)
	if err != nil || text != "The user deploys via Konflux." {
		t.Fatalf("Summarize = %q, %v", text, err)
	}
	msgs := got["messages"].([]any)
	user := msgs[1].(map[string]any)["content"].(string)
	if got["model"] != "m1" || msgs[0].(map[string]any)["content"] != "Summarize." || !strings.Contains(user, "Earlier: hello.") ||
		!strings.Contains(user, "user message 1") || !strings.Contains(user, "called f") || auth != "Bearer sk-secret-999" {
		t.Errorf("request = %v (auth %q)", got, auth)
	}
	_, err = model("/broken", 0).Summarize(t.Context(), "", events)
	if err == nil || !strings.Contains(err.Error(), "500") || strings.Contains(err.Error(), "sk-secret-999") {
		t.Errorf("server error: %v; want the status, without the key", err)
	}
	slow := model("/slow", 50*time.Millisecond)
	_, err = slow.Summarize(t.Context(), "", events)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("timeout: %v", err)
	}
}

// The summarizer's model calls get the same checks as an agent's: an
// answer that is not a whole completion is an error, not a summary.
func TestLLMSummarizerRefusesIncompleteAnswers(t *testing.T) {
	events := script("u", "a", "u", "a")
	for name, tc := range map[string]struct {
		reply fakellm.Reply
		want  string
	}{
		"streamed answer":  {fakellm.Reply{Content: "The user likes tea.", SSE: true}, ""},
		"cut-off stream":   {fakellm.Reply{Content: "The user likes", SSE: true, CutOff: true}, "cut off"},
		"html page":        {fakellm.Reply{Page: "text/html"}, `Content-Type "text/html"`},
		"empty completion": {fakellm.Reply{}, "no text and no tool calls"},
	} {
		t.Run(name, func(t *testing.T) {
			model := fakellm.Start(t, tc.reply)
			c, err := llm.New(llm.Config{BaseURL: model.URL, Model: "m1", APIKey: "sk-summary-5", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			text, err := NewLLM(c, "").Summarize(t.Context(), "", events)
			if tc.want == "" {
				if err != nil || text != tc.reply.Content {
					t.Errorf("Summarize = %q, %v; want %q", text, err, tc.reply.Content)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "sk-summary-5") || text != "" {
				t.Errorf("Summarize = %q, %v; want an error saying %s, without the key", text, err, tc.want)
			}
		})
	}
}
