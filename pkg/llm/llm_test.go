package llm

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hectormem/hector/internal/fakellm"
)

func TestCompleteAndStream(t *testing.T) {
	model := fakellm.Start(t,
		fakellm.Reply{Content: "Let me look.", Calls: [][3]string{{"c1", "search_memory", `{"query":"dogs"}`}, {"c2", "clock", `{}`}}},
		fakellm.Reply{Content: "Your dog is Rex."},
	)
	c, err := New(Config{BaseURL: model.URL, Model: "m", APIKey: "sk-1"})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Messages: []Message{{Role: "user", Content: "hi"}}, Tools: []Tool{{Name: "search_memory", Description: "d", Parameters: map[string]any{"type": "object"}}}}
	resp, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Let me look." || len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Function.Arguments != `{"query":"dogs"}` || resp.FinishReason != "tool_calls" {
		t.Errorf("Complete = %+v", resp)
	}
	body := model.Request(0)
	if body["model"] != "m" || body["stream"] != nil || !strings.Contains(fmt.Sprint(body["tools"]), "function") {
		t.Errorf("request = %v", body)
	}
	var pieces []string
	resp, err = c.Stream(t.Context(), req, func(s string) { pieces = append(pieces, s) })
	if err != nil || resp.Content != "Your dog is Rex." || len(pieces) < 2 || strings.Join(pieces, "") != resp.Content {
		t.Errorf("Stream = %+v, %v; pieces %q", resp, err, pieces)
	}
	if model.Request(1)["stream"] != true {
		t.Error("Stream did not ask for a stream")
	}
}

func TestRetriesAndErrors(t *testing.T) {
	retryBase = time.Millisecond
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n := calls.Add(1); {
		case strings.Contains(r.URL.Path, "/bad/"):
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		case n == 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(429)
		case n == 2:
			w.WriteHeader(503)
		default:
			fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
		}
	}))
	defer srv.Close()
	c, _ := New(Config{BaseURL: srv.URL + "/v1", Model: "m"})
	resp, err := c.Complete(t.Context(), Request{Messages: []Message{{Role: "user", Content: "hi"}}})
	if err != nil || resp.Content != "ok" || calls.Load() != 3 {
		t.Errorf("after 429 and 503: %+v, %v, %d calls", resp, err, calls.Load())
	}
	calls.Store(0)
	bad, _ := New(Config{BaseURL: srv.URL + "/bad", Model: "m", APIKey: "sk-secret-777"})
	_, err = bad.Complete(t.Context(), Request{})
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "sk-secret-777") || calls.Load() != 1 {
		t.Errorf("401: %v after %d calls; want one call and no key in the error", err, calls.Load())
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a gone client only once the body is read
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer slow.Close()
	timed, _ := New(Config{BaseURL: slow.URL, Model: "m", Timeout: 30 * time.Millisecond, MaxRetries: -1})
	if _, err := timed.Complete(t.Context(), Request{}); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("timeout: %v", err)
	}
}
