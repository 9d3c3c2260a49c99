package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/gateway"
	"github.com/hectormem/hector/pkg/session"
)

func gatewayClient(t *testing.T, s *Server) *gateway.Client {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &gateway.Client{BaseURL: srv.URL}
}

func msgs(texts ...string) []gateway.Message {
	var out []gateway.Message
	for i, text := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out = append(out, gateway.Message{SenderID: role + "-1", Role: role, Timestamp: 1_760_000_000_000 + int64(i), Content: text})
	}
	return out
}

func TestGatewayProtocol(t *testing.T) {
	s := newTestServer(t, nil)
	c := gatewayClient(t, s)
	ctx := t.Context()
	alice := gateway.Identity{UserID: "alice", UserKey: aliceKey, AppID: "a"}

	if err := c.Add(ctx, gateway.AddRequest{Identity: alice, SessionID: "chat:1", Messages: msgs("We deploy with Konflux", "Noted, Konflux it is")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, gateway.AddRequest{Identity: alice, SessionID: "chat:2", Messages: msgs("Konflux pipelines are slow today")}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"chat:1", "chat:2", "chat:1"} { // a repeated flush changes nothing
		if err := c.Flush(ctx, gateway.FlushRequest{Identity: alice, SessionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	do(t, s, "POST", "/v1/apps/a/users/alice/facts", aliceKey, map[string]any{"key": "deploy/tool", "value": "Konflux"})

	search := func(scope []string, conv string) []gateway.Result {
		t.Helper()
		resp, err := c.Search(ctx, gateway.SearchRequest{Identity: alice, Query: "Konflux", Scope: scope, ConversationID: conv})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Results
	}
	count := func(rs []gateway.Result, source string) int {
		n := 0
		for _, r := range rs {
			if r.SourceScope == source {
				n++
			}
		}
		return n
	}
	all := search([]string{"all_user_memory"}, "")
	if len(all) != 3 || count(all, "all_user_memory") != 3 {
		t.Errorf("all_user_memory = %+v", all)
	}
	chat := search([]string{"current_chat"}, "chat:2")
	if len(chat) != 1 || chat[0].SessionID != "chat:2" || chat[0].SourceScope != "current_chat" {
		t.Errorf("current_chat = %+v", chat)
	}
	if again := search([]string{"current_chat"}, "2"); len(again) != 1 {
		t.Errorf("a conversation ID without chat: = %+v", again)
	}
	res := search([]string{"resources"}, "")
	if len(res) != 1 || res[0].ResourceURI != "hector://facts/deploy/tool" || res[0].SourceScope != "resources" {
		t.Errorf("resources = %+v", res)
	}
	if mixed := search([]string{"current_chat", "all_user_memory", "resources"}, "chat:1"); count(mixed, "current_chat") != 2 || count(mixed, "all_user_memory") != 1 || count(mixed, "resources") != 1 {
		t.Errorf("every scope = %+v", mixed)
	}
	// A runtime searches with the turn it answers, of any length: its
	// first 8 KiB are searched, where memory:search refuses a longer query.
	long := "Konflux " + strings.Repeat("and some more words of a pasted log ", 600)
	if resp, err := c.Search(ctx, gateway.SearchRequest{Identity: alice, Query: long, Scope: []string{"all_user_memory"}}); err != nil || len(resp.Results) != 3 {
		t.Errorf("a query of %d bytes: %+v, %v; want the three Konflux turns", len(long), resp, err)
	}
	// The key is nowhere in what was stored.
	if body := do(t, s, "GET", "/v1/apps/a/users/alice/sessions/chat:1", adminKey, nil).Body.String(); strings.Contains(body, aliceKey) || !strings.Contains(body, "We deploy with Konflux") {
		t.Errorf("stored session: %s", body)
	}
	// Project IDs other than default are apps of their own.
	beta := gateway.Identity{UserID: "alice", UserKey: adminKey, AppID: "a", ProjectID: "beta"}
	if resp, err := c.Search(ctx, gateway.SearchRequest{Identity: beta, Query: "Konflux", Scope: []string{"all_user_memory"}}); err != nil || len(resp.Results) != 0 {
		t.Errorf("project beta sees project default's memory: %+v, %v", resp, err)
	}
}

func TestGatewayIdentityAndBadRequests(t *testing.T) {
	s := newTestServer(t, nil)
	c := gatewayClient(t, s)
	ctx := t.Context()
	for key, want := range map[string]int{"": 401, "wrong-key-0123456789": 401, bobKey: 403, appBKey: 403} {
		_, err := c.Search(ctx, gateway.SearchRequest{Identity: gateway.Identity{UserID: "alice", UserKey: key, AppID: "a"}, Query: "x", Scope: []string{"all_user_memory"}})
		var ge *gateway.Error
		if !errors.As(err, &ge) || ge.Status != want || ge.Op != "search" || ge.Path != "/memories/search" {
			t.Errorf("key %q: %v, want %d", key, err, want)
		} else if key != "" && strings.Contains(err.Error(), key) {
			t.Errorf("the error shows the key: %v", err)
		}
		err = c.Add(ctx, gateway.AddRequest{Identity: gateway.Identity{UserID: "alice", UserKey: key, AppID: "a"}, SessionID: "chat:1", Messages: msgs("x")})
		if !errors.As(err, &ge) || ge.Status != want {
			t.Errorf("add with key %q: %v", key, err)
		}
	}
	alice := `"user_id":"alice","user_key":"` + aliceKey + `","app_id":"a"`
	for path, cases := range map[string]map[string]string{
		"/memories/search": {
			`{` + alice + `,"query":"x","scope":[]}`:                              "scope",
			`{` + alice + `,"query":"x","scope":["everything"]}`:                  "scope",
			`{` + alice + `,"query":"x","scope":["all_user_memory"],"top_k":0}`:   "top_k",
			`{` + alice + `,"query":"x","scope":["all_user_memory"],"top_k":101}`: "top_k",
			`{` + alice + `,"query":"x","scope":["current_chat"]}`:                "conversation_id",
			`{` + alice + `,"query":"","scope":["all_user_memory"]}`:              "query",
			`{` + alice + `,"query":"x","scope":"all_user_memory"}`:               "scope",
		},
		"/memories/add": {
			`{` + alice + `,"session_id":"1","messages":[{"role":"user","timestamp":1,"content":"x"}]}`:                                                  "session_id",
			`{` + alice + `,"session_id":"chat:1","messages":[]}`:                                                                                        "messages",
			`{` + alice + `,"session_id":"chat:1","messages":[{"role":"user","timestamp":5,"content":"a"},{"role":"user","timestamp":4,"content":"b"}]}`: "timestamp",
			`{` + alice + `,"session_id":"chat:1","messages":[{"role":"user","timestamp":-1,"content":"a"}]}`:                                            "timestamp",
			`{` + alice + `,"session_id":"chat:1","messages":[{"role":"robot","timestamp":1,"content":"a"}]}`:                                            "role",
			`{` + alice + `,"session_id":"chat:1","extra":1}`:                                                                                            "extra",
		},
		"/memories/flush": {
			`{` + alice + `,"session_id":"chat:"}`: "session_id",
			`{` + alice + `}`:                      "session_id",
		},
	} {
		for body, field := range cases {
			w := do(t, s, "POST", path, "", body)
			if w.Code != 400 || !strings.Contains(w.Body.String(), field) || strings.Contains(w.Body.String(), aliceKey) {
				t.Errorf("%s %s: %d %s, want 400 naming %s", path, body, w.Code, w.Body, field)
			}
		}
	}
	if w := do(t, s, "POST", "/memories/flush", "", `{`+alice+`,"session_id":"chat:none"}`); w.Code != 404 {
		t.Errorf("flush of an unknown chat: %d", w.Code)
	}
}

// TestGatewayClientPayloads checks the exact wire shape of each call, the
// timeout, and that add is never retried.
func TestGatewayClientPayloads(t *testing.T) {
	var got []map[string]any
	var paths []string
	var mu sync.Mutex // handlers run on their connections' goroutines
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		json.Unmarshal(raw, &body)
		mu.Lock()
		got = append(got, body)
		paths = append(paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		switch r.URL.Path {
		case "/memories/search":
			w.Write([]byte(`{"results":[{"id":"e1","session_id":"chat:1","text":"t","score":0.5,"source_scope":"current_chat","resource_uri":""}]}`))
		case "/memories/add":
			w.WriteHeader(500)
			w.Write([]byte(`{"error":{"code":"internal","message":"boom"}}`))
		case "/memories/flush":
			w.Write([]byte(`{}`))
		case "/slow/memories/search":
			<-r.Context().Done()
		case "/bad/memories/search":
			w.Write([]byte(`{"results": "not a list"`))
		}
	}))
	defer srv.Close()
	c := &gateway.Client{BaseURL: srv.URL}
	id := gateway.Identity{UserID: "u1", UserKey: "secret-key-1", AppID: "app", ProjectID: "proj"}
	resp, err := c.Search(t.Context(), gateway.SearchRequest{Identity: id, ConversationID: "chat:1", Query: "q", Scope: []string{"current_chat", "resources"}, TopK: 5})
	if err != nil || len(resp.Results) != 1 || resp.Results[0].SourceScope != "current_chat" {
		t.Fatalf("search: %+v, %v", resp, err)
	}
	err = c.Add(t.Context(), gateway.AddRequest{Identity: id, SessionID: "chat:1", Messages: []gateway.Message{{SenderID: "s", Role: "user", Timestamp: 1700000000000, Content: "hi"}}})
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Op != "add" || ge.Status != 500 || ge.Code != "internal" || strings.Contains(err.Error(), "secret-key-1") || strings.Contains(err.Error(), "hi") {
		t.Errorf("add error: %#v", err)
	}
	if err := c.Flush(t.Context(), gateway.FlushRequest{Identity: id, SessionID: "chat:1"}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Errorf("%d calls: add must not be retried", calls.Load())
	}
	want := []string{
		`{"app_id":"app","conversation_id":"chat:1","project_id":"proj","query":"q","scope":["current_chat","resources"],"top_k":5,"user_id":"u1","user_key":"secret-key-1"}`,
		`{"app_id":"app","messages":[{"content":"hi","role":"user","sender_id":"s","timestamp":1700000000000}],"project_id":"proj","session_id":"chat:1","user_id":"u1","user_key":"secret-key-1"}`,
		`{"app_id":"app","project_id":"proj","session_id":"chat:1","user_id":"u1","user_key":"secret-key-1"}`,
	}
	mu.Lock()
	for i, w := range want {
		raw, _ := json.Marshal(got[i])
		if string(raw) != w {
			t.Errorf("payload %d = %s\nwant %s", i, raw, w)
		}
		if !strings.HasPrefix(paths[i], "POST /memories/") || !strings.HasSuffix(paths[i], "application/json") {
			t.Errorf("request %d: %s", i, paths[i])
		}
	}
	mu.Unlock()
	slow := &gateway.Client{BaseURL: srv.URL + "/slow", Timeout: 30 * time.Millisecond}
	if _, err := slow.Search(t.Context(), gateway.SearchRequest{Identity: id}); !errors.As(err, &ge) || ge.Message != "timed out" {
		t.Errorf("timeout: %v", err)
	}
	bad := &gateway.Client{BaseURL: srv.URL + "/bad"}
	if _, err := bad.Search(t.Context(), gateway.SearchRequest{Identity: id}); !errors.As(err, &ge) || ge.Code != "malformed" {
		t.Errorf("malformed answer: %v", err)
	}
}

// A gateway add stores all of its messages or none, on every database: a
// refused add (a message over the size limit after a good one, a time out
// of range) stores nothing and makes no session, so its corrected retry
// stores each message once.
func TestGatewayAddIsAtomic(t *testing.T) {
	onEachDatabase(t, func(t *testing.T, s *Server) {
		c := gatewayClient(t, s)
		alice := gateway.Identity{UserID: "alice", UserKey: aliceKey, AppID: "a"}
		huge := msgs("a small first message", strings.Repeat("x", session.DefaultMaxEventBytes))
		if err := c.Add(t.Context(), gateway.AddRequest{Identity: alice, SessionID: "chat:1", Messages: huge}); err == nil {
			t.Fatal("an add with a message over the size limit was accepted")
		}
		farFuture := msgs("a message from the year 2300")
		farFuture[0].Timestamp = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
		if err := c.Add(t.Context(), gateway.AddRequest{Identity: alice, SessionID: "chat:2", Messages: farFuture}); err == nil {
			t.Fatal("an add from the year 2300 was accepted")
		}
		if w := do(t, s, "GET", "/v1/apps/a/users/alice/sessions", adminKey, nil); strings.Contains(w.Body.String(), "chat:") {
			t.Errorf("refused adds left sessions: %s", w.Body)
		}
		fixed := msgs("a small first message", "a second one, shorter now")
		if err := c.Add(t.Context(), gateway.AddRequest{Identity: alice, SessionID: "chat:1", Messages: fixed}); err != nil {
			t.Fatal(err)
		}
		w := do(t, s, "GET", "/v1/apps/a/users/alice/sessions/chat:1", adminKey, nil)
		if n := strings.Count(w.Body.String(), "a small first message"); n != 1 || !strings.Contains(w.Body.String(), `"last_seq":2`) {
			t.Errorf("after the corrected retry the first message is stored %d times: %s", n, w.Body)
		}
	})
}
