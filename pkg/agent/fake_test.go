package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// reply is what the fake model says to one request.
type reply struct {
	content string
	calls   [][3]string // id, name, JSON arguments
	status  int         // an HTTP error instead
	wait    chan struct{}
}

// fakeModel is an in-process chat-completions server: it answers each
// request with the next scripted reply, streamed (SSE) or as one JSON
// body as the request asks, and records the requests.
type fakeModel struct {
	mu       sync.Mutex
	script   []reply
	requests []map[string]any
	started  chan struct{}
}

func newFakeModel(t *testing.T, script ...reply) (*fakeModel, string) {
	f := &fakeModel{script: script, started: make(chan struct{}, 16)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v1"
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req map[string]any
	json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.requests = append(f.requests, req)
	var rep reply
	if len(f.script) > 0 {
		rep, f.script = f.script[0], f.script[1:]
	} else {
		rep = reply{status: 500}
	}
	f.mu.Unlock()
	f.started <- struct{}{}
	if rep.wait != nil {
		select {
		case <-rep.wait:
		case <-r.Context().Done():
			return
		}
	}
	if rep.status != 0 {
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure %d","type":"server_error"}}`, rep.status)
		return
	}
	var calls []map[string]any
	for i, c := range rep.calls {
		calls = append(calls, map[string]any{"index": i, "id": c[0], "type": "function", "function": map[string]any{"name": c[1], "arguments": c[2]}})
	}
	finish := "stop"
	if calls != nil {
		finish = "tool_calls"
	}
	if req["stream"] != true {
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "choices": []any{map[string]any{
			"index": 0, "message": map[string]any{"role": "assistant", "content": rep.content, "tool_calls": calls}, "finish_reason": finish}}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta map[string]any, finish any) {
		chunk, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", chunk)
		w.(http.Flusher).Flush()
	}
	send(map[string]any{"role": "assistant"}, nil)
	for i := 0; i < len(rep.content); i += 4 { // text in small pieces
		send(map[string]any{"content": rep.content[i:min(i+4, len(rep.content))]}, nil)
	}
	for i, c := range calls { // each call's arguments in two halves, as real servers split them
		args := c["function"].(map[string]any)["arguments"].(string)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c["id"], "type": "function", "function": map[string]any{"name": c["function"].(map[string]any)["name"], "arguments": args[:len(args)/2]}}}}, nil)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": args[len(args)/2:]}}}}, nil)
	}
	send(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (f *fakeModel) request(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

func (f *fakeModel) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}
