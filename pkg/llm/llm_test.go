package llm

import (
	"fmt"
	"github.com/hectormem/hector/internal/retry"
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
	retry.Base = time.Millisecond
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
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
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

// Endpoints that ignore "stream" answer one JSON completion; it is read
// as if streamed, text and tool calls alike.
func TestStreamReadsAJSONAnswer(t *testing.T) {
	model := fakellm.Start(t,
		fakellm.Reply{Content: "Noted.", JSON: true},
		fakellm.Reply{Calls: [][3]string{{"c1", "search_memory", `{"query":"dog"}`}}, JSON: true},
	)
	c, _ := New(Config{BaseURL: model.URL, Model: "m"})
	var pieces []string
	resp, err := c.Stream(t.Context(), Request{}, func(s string) { pieces = append(pieces, s) })
	if err != nil || resp.Content != "Noted." || resp.FinishReason != "stop" || strings.Join(pieces, "") != "Noted." {
		t.Errorf("JSON answer to a stream: %+v, %v, pieces %q", resp, err, pieces)
	}
	resp, err = c.Stream(t.Context(), Request{}, nil)
	if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Function.Name != "search_memory" || resp.ToolCalls[0].Function.Arguments != `{"query":"dog"}` {
		t.Errorf("JSON tool call answer to a stream: %+v, %v", resp, err)
	}
	if model.Request(0)["stream"] != true {
		t.Error("the request did not ask for a stream")
	}
}

// An answer that is not a whole completion is an error that says what the
// endpoint did wrong, never an empty or partial reply, and never holds the
// key or the body.
func TestIncompleteAnswersAreErrors(t *testing.T) {
	const key = "sk-never-shown-31"
	cases := []struct {
		name  string
		reply fakellm.Reply
		want  string
	}{
		{"cut-off stream", fakellm.Reply{Content: "My dog is", CutOff: true}, "without a finish_reason or [DONE]"},
		{"cut-off stream, no text", fakellm.Reply{CutOff: true}, "cut off"},
		{"html page", fakellm.Reply{Page: "text/html; charset=utf-8"}, `Content-Type "text/html; charset=utf-8"`},
		{"binary content type", fakellm.Reply{Page: "application/octet-stream"}, "neither application/json nor text/event-stream"},
		{"empty streamed answer", fakellm.Reply{}, "no text and no tool calls"},
		{"empty JSON answer", fakellm.Reply{JSON: true}, "no text and no tool calls"},
		{"blank answer", fakellm.Reply{Content: "  \n", JSON: true}, "no text and no tool calls"},
	}
	for _, tc := range cases {
		for _, streamed := range []bool{true, false} {
			if tc.reply.CutOff && !streamed {
				continue // only a stream can be cut off mid-answer
			}
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, streamed), func(t *testing.T) {
				model := fakellm.Start(t, tc.reply)
				c, _ := New(Config{BaseURL: model.URL, Model: "m", APIKey: key})
				var resp *Response
				var err error
				if streamed {
					resp, err = c.Stream(t.Context(), Request{}, nil)
				} else {
					resp, err = c.Complete(t.Context(), Request{})
				}
				if err == nil {
					t.Fatalf("no error; answer %+v", resp)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %q does not say %q", err, tc.want)
				}
				if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "sign in") {
					t.Errorf("error %q holds the key or the body", err)
				}
			})
		}
	}
}

// An error object inside a 200 answer or a stream is reported, with any
// echoed key redacted.
func TestErrorsInsideAnswers(t *testing.T) {
	const key = "sk-echoed-77"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/sse/") {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded for %s\"}}\n\n", key)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"error":{"message":"quota exceeded for %s"}}`, key)
	}))
	defer srv.Close()
	for path, want := range map[string]string{"/json/v1": "quota exceeded for [redacted]", "/sse/v1": "overloaded for [redacted]"} {
		c, _ := New(Config{BaseURL: srv.URL + path, Model: "m", APIKey: key})
		if _, err := c.Stream(t.Context(), Request{}, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

// Streamed tool calls are kept whatever their indexes: some servers number
// them from 1 or leave gaps, and a call left out would never be answered.
func TestStreamedToolCallsWithIndexesNotFromZero(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []string{
			`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_a","function":{"name":"search_memory","arguments":"{\"query\":"}}]}}]}`,
			`{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"dogs\"}"}}]}}]}`,
			`{"choices":[{"delta":{"tool_calls":[{"index":3,"id":"call_b","function":{"name":"memory_recall","arguments":"{}"}}]}}]}`,
			`{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
		}
	}))
	defer srv.Close()
	c, _ := New(Config{BaseURL: srv.URL, Model: "m"})
	resp, err := c.Stream(t.Context(), Request{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID != "call_a" || resp.ToolCalls[0].Function.Arguments != `{"query":"dogs"}` || resp.ToolCalls[1].ID != "call_b" {
		t.Errorf("tool calls %+v, want call_a then call_b, whole", resp.ToolCalls)
	}
}
