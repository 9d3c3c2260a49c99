package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/gateway"
	"github.com/hectormem/hector/pkg/session"
)

// fakeGateway answers each operation as told and records what it got.
type fakeGateway struct {
	mu     sync.Mutex
	calls  map[string][]map[string]any
	answer map[string]func(w http.ResponseWriter, r *http.Request)
}

func startGateway(t *testing.T, answer map[string]func(w http.ResponseWriter, r *http.Request)) (*fakeGateway, string) {
	g := &fakeGateway{calls: map[string][]map[string]any{}, answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		op := strings.TrimPrefix(r.URL.Path, "/memories/")
		g.mu.Lock()
		g.calls[op] = append(g.calls[op], body)
		g.mu.Unlock()
		if f := g.answer[op]; f != nil {
			f(w, r)
			return
		}
		switch op {
		case "search":
			fmt.Fprint(w, `{"results":[{"id":"r1","session_id":"chat:old","text":"prefers window seats","score":0.9,"source_scope":"all_user_memory"}]}`)
		default:
			fmt.Fprint(w, `{}`)
		}
	}))
	t.Cleanup(srv.Close)
	return g, srv.URL
}

func (g *fakeGateway) count(op string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls[op])
}

const remoteKey = "gateway-user-key-123456"

func remoteRun(t *testing.T, answer map[string]func(w http.ResponseWriter, r *http.Request), timeout time.Duration) (*fixture, *fakeGateway, *Result) {
	g, url := startGateway(t, answer)
	f := setup(t, Config{Name: "assistant", App: "app", Instruction: "Be brief.",
		Remote: &RemoteMemory{Client: &gateway.Client{BaseURL: url, Timeout: timeout}, UserKey: remoteKey, AppID: "app"}},
		fakellm.Reply{Content: "Window seat booked."})
	res, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s", Message: "Book my flight"}, nil)
	if err != nil || res.Reply != "Window seat booked." {
		t.Fatalf("the turn: %+v, %v", res, err)
	}
	return f, g, res
}

func TestRemoteMemoryRecallsAndRemembers(t *testing.T) {
	f, g, res := remoteRun(t, nil, 5*time.Second)
	msgs := messages(f.model.Request(0))
	if msgs[0]["role"] != "system" || msgs[0]["content"] != "Be brief." {
		t.Errorf("the system prompt changed: %v", msgs[0])
	}
	ref := msgs[1]
	if ref["role"] != "user" || !strings.Contains(ref["content"].(string), "Untrusted reference data") || !strings.Contains(ref["content"].(string), "window seats") {
		t.Errorf("the recalled notes: %v", ref)
	}
	search := g.calls["search"][0]
	if search["conversation_id"] != "chat:s" || search["query"] != "Book my flight" || search["user_id"] != "u" {
		t.Errorf("search sent %v", search)
	}
	add := g.calls["add"][0]
	got, _ := json.Marshal(add["messages"])
	if !strings.Contains(string(got), `"content":"Book my flight"`) || !strings.Contains(string(got), `"content":"Window seat booked."`) || len(add["messages"].([]any)) != 2 {
		t.Errorf("add sent %s: want the user's message and the reply only", got)
	}
	if g.count("flush") != 1 || res.Metadata != nil {
		t.Errorf("flush calls %d, metadata %v", g.count("flush"), res.Metadata)
	}
	// Each operation that succeeded is recorded, hidden, without content or key.
	evs := stored(t, f.sessions, "u", "s")
	records := audits(t, evs)
	want := []string{
		`{"operation":"search","outcome":"ok","results":1,"scope":["current_chat","all_user_memory"]}`,
		`{"messages":2,"operation":"add","outcome":"ok","session_id":"chat:s"}`,
		`{"operation":"flush","outcome":"ok","session_id":"chat:s"}`,
	}
	if len(evs) != 5 || strings.Join(records, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d events stored, audits:\n%s\nwant the turn and:\n%s", len(evs), strings.Join(records, "\n"), strings.Join(want, "\n"))
	}
}

// audits returns the audit records among evs, in order, as JSON; an audit
// event with a message or a key fails the test.
func audits(t *testing.T, evs []*session.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		if ev.Author != AuditAuthor {
			continue
		}
		if ev.Message != nil {
			t.Error("an audit event has a message: the model would see it")
		}
		raw, _ := json.Marshal(ev.Metadata["audit"])
		if strings.Contains(string(raw), remoteKey) {
			t.Error("an audit event holds the gateway key")
		}
		out = append(out, string(raw))
	}
	return out
}

func TestRemoteMemoryFailuresNeverFailTheTurn(t *testing.T) {
	status := func(code int) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"code":"x","message":"key %s refused"}}`, remoteKey)
		}
	}
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	malformed := func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"results": 42`) }
	for name, tc := range map[string]struct {
		answer          map[string]func(w http.ResponseWriter, r *http.Request)
		op, category    string
		status, flushes int
	}{
		"search timeout": {map[string]func(http.ResponseWriter, *http.Request){"search": slow}, "search", "timeout", 0, 1},
		"search 401":     {map[string]func(http.ResponseWriter, *http.Request){"search": status(401)}, "search", "auth", 401, 1},
		"search 500":     {map[string]func(http.ResponseWriter, *http.Request){"search": status(500)}, "search", "server_error", 500, 1},
		"malformed JSON": {map[string]func(http.ResponseWriter, *http.Request){"search": malformed}, "search", "malformed_response", 200, 1},
		"add failure":    {map[string]func(http.ResponseWriter, *http.Request){"add": status(500)}, "add", "server_error", 500, 0},
		"flush failure":  {map[string]func(http.ResponseWriter, *http.Request){"flush": status(503)}, "flush", "server_error", 503, 1},
	} {
		t.Run(name, func(t *testing.T) {
			timeout := 5 * time.Second // generous: only the timeout case should time out, however loaded the machine
			if tc.category == "timeout" {
				timeout = 100 * time.Millisecond
			}
			f, g, res := remoteRun(t, tc.answer, timeout)
			if g.count("flush") != tc.flushes {
				t.Errorf("%d flushes, want %d (a failed add skips the flush)", g.count("flush"), tc.flushes)
			}
			if res.Metadata["memory_gateway_failures"] != 1 {
				t.Errorf("metadata %v", res.Metadata)
			}
			evs := stored(t, f.sessions, "u", "s")
			var failures []map[string]any
			for _, raw := range audits(t, evs) {
				var record map[string]any
				json.Unmarshal([]byte(raw), &record)
				if record["outcome"] == "failed" {
					failures = append(failures, record)
				}
			}
			if len(failures) != 1 || failures[0]["operation"] != tc.op || failures[0]["category"] != tc.category || failures[0]["status"] != float64(tc.status) {
				t.Errorf("failures = %v, want one %s/%s/%d", failures, tc.op, tc.category, tc.status)
			}
			raw, _ := json.Marshal(evs)
			if strings.Contains(string(raw), remoteKey) {
				t.Error("a stored event holds the gateway key")
			}
			// The turn, the failed operation, and those that succeeded.
			if want := 2 + 1 + map[string]int{"search": 2, "add": 1, "flush": 2}[tc.op]; len(evs) != want {
				t.Errorf("%d events; want %d", len(evs), want)
			}
		})
	}
}
