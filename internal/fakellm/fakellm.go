// Package fakellm is an in-process chat-completions server for tests: it
// answers each request with the next scripted reply, streamed (SSE) or as
// one JSON body as the request asks (or as the reply overrides, the way
// some real endpoints do), and records the requests.
package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Reply is what the model says to one request.
type Reply struct {
	Content string
	Calls   [][3]string   // tool calls: id, name, JSON arguments
	Status  int           // an HTTP error instead
	Wait    chan struct{} // hold the answer until closed
	// JSON answers one JSON completion even when a stream was asked for,
	// as servers that ignore "stream" do.
	JSON bool
	// SSE streams the answer even when one JSON completion was asked for.
	SSE bool
	// CutOff ends a stream after the text, before any finish_reason or
	// [DONE], as a dropped connection does.
	CutOff bool
	// Page answers 200 with this Content-Type and an HTML page, as a proxy's
	// login or error page does.
	Page string
	// Usage is the prompt and completion tokens a JSON answer reports.
	Usage [2]int
}

// Server is a running fake model.
type Server struct {
	URL      string        // base URL, including /v1
	Started  chan struct{} // receives once per request, as it arrives
	mu       sync.Mutex
	script   []Reply
	requests []map[string]any
}

// Start serves script until t ends. Requests past the script get a 500.
func Start(t testing.TB, script ...Reply) *Server {
	f := &Server{script: script, Started: make(chan struct{}, 64)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/v1"
	return f
}

func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req map[string]any
	json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.requests = append(f.requests, req)
	var rep Reply
	if len(f.script) > 0 {
		rep, f.script = f.script[0], f.script[1:]
	} else {
		rep = Reply{Status: 500}
	}
	f.mu.Unlock()
	f.Started <- struct{}{}
	if rep.Wait != nil {
		select {
		case <-rep.Wait:
		case <-r.Context().Done():
			return
		}
	}
	if rep.Page != "" {
		w.Header().Set("Content-Type", rep.Page)
		fmt.Fprint(w, "<html><body>Please sign in</body></html>")
		return
	}
	if rep.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure %d","type":"server_error"}}`, rep.Status)
		return
	}
	var calls []map[string]any
	for i, c := range rep.Calls {
		calls = append(calls, map[string]any{"index": i, "id": c[0], "type": "function", "function": map[string]any{"name": c[1], "arguments": c[2]}})
	}
	finish := "stop"
	if calls != nil {
		finish = "tool_calls"
	}
	if (req["stream"] != true || rep.JSON) && !rep.SSE {
		w.Header().Set("Content-Type", "application/json")
		body := map[string]any{"id": "x", "object": "chat.completion", "choices": []any{map[string]any{
			"index": 0, "message": map[string]any{"role": "assistant", "content": rep.Content, "tool_calls": calls}, "finish_reason": finish}}}
		if rep.Usage != [2]int{} {
			body["usage"] = map[string]any{"prompt_tokens": rep.Usage[0], "completion_tokens": rep.Usage[1], "total_tokens": rep.Usage[0] + rep.Usage[1]}
		}
		json.NewEncoder(w).Encode(body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta map[string]any, finish any) {
		chunk, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", chunk)
		w.(http.Flusher).Flush()
	}
	send(map[string]any{"role": "assistant"}, nil)
	for i := 0; i < len(rep.Content); i += 4 { // text in small pieces
		send(map[string]any{"content": rep.Content[i:min(i+4, len(rep.Content))]}, nil)
	}
	if rep.CutOff {
		return
	}
	for i, c := range calls { // each call's arguments in two halves, as real servers split them
		args := c["function"].(map[string]any)["arguments"].(string)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c["id"], "type": "function", "function": map[string]any{"name": c["function"].(map[string]any)["name"], "arguments": args[:len(args)/2]}}}}, nil)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": args[len(args)/2:]}}}}, nil)
	}
	send(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// Request returns the i-th request's decoded body.
func (f *Server) Request(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

// Count is how many requests arrived.
func (f *Server) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}
