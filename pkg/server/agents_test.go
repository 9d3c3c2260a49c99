package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
)

func agentServer(t *testing.T, script ...fakellm.Reply) (*Server, *fakellm.Server) {
	model := fakellm.Start(t, script...)
	s := newTestServer(t, nil, fmt.Sprintf(`
llms:
  fake: {base_url: %q, model: fake-model}
agents:
  assistant:
    app: a
    llm: fake
    instruction: You remember what users told you.
    working_memory: {type: buffer_window, max_messages: 10}
    search: {enabled: true, max_results: 3}
`, model.URL))
	return s, model
}

func say(t *testing.T, s *Server, user, session, text string) {
	t.Helper()
	do(t, s, "POST", "/v1/apps/a/users/"+user+"/sessions", adminKey, map[string]any{"session_id": session})
	w := do(t, s, "POST", "/v1/apps/a/users/"+user+"/sessions/"+session+"/events", adminKey,
		map[string]any{"author": "user", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}})
	if w.Code != 201 {
		t.Fatal(w.Code, w.Body)
	}
}

func TestAgentRunOverHTTP(t *testing.T) {
	s, model := agentServer(t,
		fakellm.Reply{Calls: [][3]string{{"call_1", "search_memory", `{"query":"favourite city"}`}}},
		fakellm.Reply{Content: "You said Lisbon."},
		fakellm.Reply{Calls: [][3]string{{"call_2", "search_memory", `{"query":"favourite city"}`}}},
		fakellm.Reply{Content: "Still Lisbon."},
	)
	say(t, s, "alice", "old", "My favourite city is Lisbon")
	say(t, s, "bob", "old", "My favourite city is Oslo")

	w := do(t, s, "POST", "/v1/agents/assistant/run", aliceKey, map[string]any{"user_id": "alice", "message": "What is my favourite city?"})
	if w.Code != 200 {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	var res struct {
		SessionID string           `json:"session_id"`
		Reply     string           `json:"reply"`
		Events    []map[string]any `json:"events"`
	}
	json.Unmarshal(w.Body.Bytes(), &res)
	if res.Reply != "You said Lisbon." || len(res.Events) != 4 || res.SessionID == "" {
		t.Fatalf("result = %s", w.Body)
	}
	toolMsg := fmt.Sprint(model.Request(1)["messages"])
	if !strings.Contains(toolMsg, "Lisbon") || strings.Contains(toolMsg, "Oslo") {
		t.Errorf("the tool result the model saw: %s", toolMsg)
	}

	// Streamed, in the same session: tool activity, text, then the whole result.
	w = do(t, s, "POST", "/v1/agents/assistant/run?stream=true", aliceKey, map[string]any{"user_id": "alice", "session_id": res.SessionID, "message": "And now?"})
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", w.Code, w.Header())
	}
	var kinds []string
	var text strings.Builder
	lines := bufio.NewScanner(strings.NewReader(w.Body.String()))
	for lines.Scan() {
		if kind, ok := strings.CutPrefix(lines.Text(), "event: "); ok {
			if len(kinds) == 0 || kinds[len(kinds)-1] != kind {
				kinds = append(kinds, kind)
			}
			lines.Scan()
			if kind == "text" {
				var d map[string]string
				json.Unmarshal([]byte(strings.TrimPrefix(lines.Text(), "data: ")), &d)
				text.WriteString(d["text"])
			}
		}
	}
	if got := strings.Join(kinds, " "); got != "tool_call tool_result text done" || text.String() != "Still Lisbon." {
		t.Errorf("stream events %q, text %q", got, text.String())
	}
	sess := do(t, s, "GET", "/v1/apps/a/users/alice/sessions/"+res.SessionID, aliceKey, nil)
	if n := strings.Count(sess.Body.String(), `"seq":`); n != 8 {
		t.Errorf("two turns stored %d events, want 8", n)
	}
}

func TestAgentRunAuthAndErrors(t *testing.T) {
	s, _ := agentServer(t, fakellm.Reply{Status: 500}, fakellm.Reply{Status: 500}, fakellm.Reply{Status: 500}, fakellm.Reply{Status: 500})
	run := map[string]any{"user_id": "alice", "session_id": "s", "message": "hi"}
	for key, want := range map[string]int{"": 401, "wrong-key-0123456789": 401, bobKey: 403, appBKey: 403} {
		if w := do(t, s, "POST", "/v1/agents/assistant/run", key, run); w.Code != want {
			t.Errorf("run as %q: %d, want %d", key, w.Code, want)
		}
	}
	if w := do(t, s, "POST", "/v1/agents/nobody/run", aliceKey, run); w.Code != 404 {
		t.Errorf("unknown agent: %d", w.Code)
	}
	if w := do(t, s, "POST", "/v1/agents/assistant/run", aliceKey, map[string]any{"user_id": "alice", "message": "hi", "app": "b"}); w.Code != 400 {
		t.Errorf("another app in the body: %d", w.Code)
	}
	w := do(t, s, "POST", "/v1/agents/assistant/run", aliceKey, run)
	if w.Code != 502 || !strings.Contains(w.Body.String(), "model_error") || !strings.Contains(w.Body.String(), "saved") {
		t.Errorf("a failing model: %d %s", w.Code, w.Body)
	}
	sess := do(t, s, "GET", "/v1/apps/a/users/alice/sessions/s", aliceKey, nil)
	if n := strings.Count(sess.Body.String(), `"seq":`); n != 1 || !strings.Contains(sess.Body.String(), `"text":"hi"`) {
		t.Errorf("after a failed turn: %s", sess.Body)
	}
}

// The bug report's endpoint ignores "stream" and answers one JSON
// completion: the reply is its text, not an empty one.
func TestAgentRunWithAnEndpointThatDoesNotStream(t *testing.T) {
	s, _ := agentServer(t,
		fakellm.Reply{Calls: [][3]string{{"call_1", "search_memory", `{"query":"dog"}`}}, JSON: true},
		fakellm.Reply{Content: "Noted.", JSON: true},
	)
	w := do(t, s, "POST", "/v1/agents/assistant/run", aliceKey, map[string]any{"user_id": "alice", "session_id": "s", "message": "My dog is called Rex."})
	var res struct {
		Reply  string           `json:"reply"`
		Events []map[string]any `json:"events"`
	}
	json.Unmarshal(w.Body.Bytes(), &res)
	if w.Code != 200 || res.Reply != "Noted." || len(res.Events) != 4 {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	sess := do(t, s, "GET", "/v1/apps/a/users/alice/sessions/s", aliceKey, nil)
	if !strings.Contains(sess.Body.String(), `"text":"Noted."`) || !strings.Contains(sess.Body.String(), `"name":"search_memory"`) {
		t.Errorf("stored turn: %s", sess.Body)
	}
}

// Answers that are not a whole completion fail the run as a model error:
// 502, the user's message kept and nothing else, and an error that says
// what the endpoint did wrong.
func TestAgentRunRefusesIncompleteAnswers(t *testing.T) {
	for name, tc := range map[string]struct {
		reply fakellm.Reply
		want  string
	}{
		"cut-off stream": {fakellm.Reply{Content: "Your dog is", CutOff: true}, "cut off"},
		"html page":      {fakellm.Reply{Page: "text/html"}, `Content-Type \"text/html\"`},
		"empty answer":   {fakellm.Reply{JSON: true}, "no text and no tool calls"},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := agentServer(t, tc.reply)
			w := do(t, s, "POST", "/v1/agents/assistant/run", aliceKey, map[string]any{"user_id": "alice", "session_id": "s", "message": "hi"})
			body := w.Body.String()
			if w.Code != 502 || !strings.Contains(body, "model_error") || !strings.Contains(body, "saved") || !strings.Contains(body, tc.want) {
				t.Errorf("run: %d %s; want 502 model_error saying %s", w.Code, body, tc.want)
			}
			if strings.Contains(body, "Your dog is") || strings.Contains(body, "sign in") {
				t.Errorf("the error holds the endpoint's body: %s", body)
			}
			sess := do(t, s, "GET", "/v1/apps/a/users/alice/sessions/s", aliceKey, nil)
			if n := strings.Count(sess.Body.String(), `"seq":`); n != 1 || !strings.Contains(sess.Body.String(), `"text":"hi"`) {
				t.Errorf("after a refused answer: %s", sess.Body)
			}
		})
	}
}

// An agent that may write app-scoped facts is named in a WARN at start-up:
// one user's turn would change what every user is told.
func TestAppScopedFactWritesWarn(t *testing.T) {
	for policy, warns := range map[string]bool{"auto": true, "approvers": true, "off": false} {
		cfg, err := config.Parse("t.yaml", []byte(fmt.Sprintf(`
server:
  data_dir: %s
  sessions: {backend: inmemory}
  artifacts: {backend: inmemory}
  index: {type: keyword, persist: false}
llms:
  fake: {base_url: http://127.0.0.1:1, model: m}
agents:
  shared: {llm: fake, facts: {enabled: true, scope: app, write_policy: %s}}
`, t.TempDir(), policy)), config.Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		svcs, err := app.Open(t.Context(), cfg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		if _, err := New(svcs, cfg, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
			t.Fatal(err)
		}
		svcs.Close()
		warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "app-scoped facts") && strings.Contains(logs.String(), "agent=shared")
		if warned != warns {
			t.Errorf("write_policy %s: warned %v, want %v:\n%s", policy, warned, warns, logs.String())
		}
	}
}

// An agent's tools from an MCP server named in the config (a real one,
// internal/mcpcounter, run as a command), their results cached per app.
func TestAgentMCPToolsCached(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "mcpcounter")
	if out, err := exec.Command("go", "build", "-o", counter, "github.com/hectormem/hector/internal/mcpcounter").CombinedOutput(); err != nil {
		t.Fatalf("building internal/mcpcounter: %v\n%s", err, out)
	}
	ask := fakellm.Reply{Calls: [][3]string{{"c", "lookup", `{"q":"tides"}`}}}
	model := fakellm.Start(t, ask, fakellm.Reply{Content: "one"}, ask, fakellm.Reply{Content: "two"})
	s := newTestServer(t, nil, fmt.Sprintf(`
llms:
  fake: {base_url: %q, model: fake-model}
agents:
  assistant:
    app: a
    llm: fake
    mcp_servers:
      - {name: counter, command: [%q], cache: {ttl: 5m}}
`, model.URL, counter))
	var hits []any
	for _, user := range []string{"alice", "bob"} {
		w := do(t, s, "POST", "/v1/agents/assistant/run", adminKey, map[string]any{"user_id": user, "message": "tides?"})
		var res struct{ Metadata map[string]any }
		json.Unmarshal(w.Body.Bytes(), &res)
		if w.Code != 200 {
			t.Fatalf("run for %s: %d %s", user, w.Code, w.Body)
		}
		hits = append(hits, res.Metadata["tool_cache_hits"])
	}
	if hits[0] != nil || hits[1] != 1.0 {
		t.Errorf("tool_cache_hits per turn = %v, want none then 1 (the app's cached result)", hits)
	}
	if got := fmt.Sprint(model.Request(3)["messages"]); !strings.Contains(got, `\"calls\":1`) && !strings.Contains(got, `"calls":1`) {
		t.Errorf("the second turn's tool result: %s", got)
	}
}

// ?stream is a flag: bare, or any spelling of true, streams; false does
// not; anything else is a 400 before the model is asked.
func TestAgentStreamFlag(t *testing.T) {
	s, _ := agentServer(t, fakellm.Reply{Content: "one"}, fakellm.Reply{Content: "two"}, fakellm.Reply{Content: "three"}, fakellm.Reply{Content: "four"})
	for query, want := range map[string]string{"?stream": "text/event-stream", "?stream=1": "text/event-stream", "?stream=TRUE": "text/event-stream", "?stream=false": "application/json"} {
		w := do(t, s, "POST", "/v1/agents/assistant/run"+query, aliceKey, map[string]any{"user_id": "alice", "message": "hi"})
		if w.Code != 200 || w.Header().Get("Content-Type") != want {
			t.Errorf("%s: %d %s, want %s", query, w.Code, w.Header().Get("Content-Type"), want)
		}
	}
	if w := do(t, s, "POST", "/v1/agents/assistant/run?stream=maybe", aliceKey, map[string]any{"user_id": "alice", "message": "hi"}); w.Code != 400 || !strings.Contains(w.Body.String(), `stream=\"maybe\"`) {
		t.Errorf("?stream=maybe: %d %s", w.Code, w.Body)
	}
}

// GET /v1/agents lists the agents a credential may run, with what they
// run on and the tools their model may call; another app's are not listed.
func TestListAgents(t *testing.T) {
	s, _ := agentServer(t)
	want := `{"agents":[{"name":"assistant","app":"a","llm":"fake","model":"fake-model","working_memory":"buffer_window","tools":["search_memory"],"mcp_servers":[],"run":"/v1/agents/assistant/run"}]}`
	for _, key := range []string{adminKey, appAKey, aliceKey} {
		if w := do(t, s, "GET", "/v1/agents", key, nil); w.Code != 200 || strings.TrimSpace(w.Body.String()) != want {
			t.Errorf("GET /v1/agents with %s: %d %s", key[:5], w.Code, w.Body)
		}
	}
	if w := do(t, s, "GET", "/v1/agents", appBKey, nil); w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"agents":[]}` {
		t.Errorf("another app's credential: %d %s", w.Code, w.Body)
	}
}
