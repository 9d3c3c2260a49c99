package server

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/telemetry"
)

// receiver is an in-process OTLP/HTTP trace receiver: it keeps the spans
// exporters send it, decoded from their protobuf.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, _ := io.ReadAll(body)
	var req collector.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	rc.mu.Unlock()
	resp, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(resp)
}

// One agent turn, traced into an in-process OTLP receiver: the request's
// span continues the caller's trace, and under it the turn, its model
// calls (model and tokens), its tool call, the search that tool ran (per
// signal, naming the store, with its embedding) and the append that
// stored the turn, each under the right parent; no span holds what anyone
// said.
func TestTraceOfAnAgentTurn(t *testing.T) {
	rc := &receiver{}
	collectorServer := httptest.NewServer(rc)
	t.Cleanup(collectorServer.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collectorServer.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	stop, err := telemetry.Start(t.Context(), "hector-test", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	model := fakellm.Start(t,
		fakellm.Reply{Calls: [][3]string{{"call_1", "search_memory", `{"query":"favourite city"}`}}, Usage: [2]int{120, 9}, JSON: true},
		fakellm.Reply{Content: "You said Zanzibar-reply-canary.", Usage: [2]int{150, 7}, JSON: true})
	dir := t.TempDir()
	s := newTestServer(t, func(c *config.Config) {
		c.Databases = map[string]config.Database{"main": {Driver: "sqlite", DSN: dir + "/hector.db"}}
		c.Server.Sessions = config.Sessions{Backend: "sql", Database: "main"}
		c.Server.Index.Type, c.Server.Index.Embedder = "hybrid", "h"
	}, fmt.Sprintf(`
llms:
  fake: {base_url: %q, model: fake-model}
embedders:
  h: {type: hash}
agents:
  assistant:
    app: a
    llm: fake
    search: {enabled: true}
`, model.URL))
	say(t, s, "alice", "old", "My favourite city is Zanzibar-said-canary")

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req := httptest.NewRequest("POST", "/v1/agents/assistant/run", strings.NewReader(`{"user_id":"alice","message":"Which city, Zanzibar-asked-canary?"}`))
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	if err := stop(t.Context()); err != nil { // flushes
		t.Fatal(err)
	}

	rc.mu.Lock()
	defer rc.mu.Unlock()
	byName := map[string][]*tracepb.Span{}
	var turnTrace []*tracepb.Span
	for _, sp := range rc.spans {
		if hex.EncodeToString(sp.TraceId) == traceID {
			turnTrace = append(turnTrace, sp)
			byName[sp.Name] = append(byName[sp.Name], sp)
		}
	}
	one := func(name string) *tracepb.Span {
		t.Helper()
		if len(byName[name]) == 0 {
			var names []string
			for _, sp := range turnTrace {
				names = append(names, sp.Name)
			}
			t.Fatalf("no span %q in the turn's trace; it has %q", name, names)
		}
		return byName[name][0]
	}
	childOf := func(child, parent *tracepb.Span) {
		t.Helper()
		if hex.EncodeToString(child.ParentSpanId) != hex.EncodeToString(parent.SpanId) {
			t.Errorf("span %q is not a child of %q", child.Name, parent.Name)
		}
	}
	httpSpan := one("POST /v1/agents/{agent}/run")
	if hex.EncodeToString(httpSpan.ParentSpanId) != parentID || httpSpan.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("the request's span does not continue the caller's trace: parent %x, kind %v", httpSpan.ParentSpanId, httpSpan.Kind)
	}
	turn := one("agent.turn")
	childOf(turn, httpSpan)
	chats := byName["chat fake-model"]
	if len(chats) != 2 {
		t.Fatalf("%d model calls traced, want 2", len(chats))
	}
	for _, c := range chats {
		childOf(c, turn)
		if attr(c, "gen_ai.request.model") != "fake-model" || attr(c, "gen_ai.usage.input_tokens") == "0" || attr(c, "gen_ai.usage.output_tokens") == "0" {
			t.Errorf("a model call's span lacks the model or its tokens: %v", c.Attributes)
		}
	}
	tool := one("execute_tool search_memory")
	childOf(tool, turn)
	search := one("index.search")
	childOf(search, tool)
	for _, signal := range []string{"index.search.keyword", "index.search.vector"} {
		sp := one(signal)
		childOf(sp, search)
		if !strings.Contains(attr(sp, "hector.index.store"), "in process") {
			t.Errorf("%s does not name its store: %v", signal, sp.Attributes)
		}
	}
	childOf(one("embed"), search)
	appendSpan := one("session.append")
	childOf(appendSpan, turn)
	if attr(appendSpan, "hector.events") == "" || attr(appendSpan, "db.system.name") == "" {
		t.Errorf("the append's span: %v", appendSpan.Attributes)
	}

	// Nothing anyone said, in any span of any trace.
	everything := fmt.Sprint(rc.spans)
	for _, said := range []string{"Zanzibar", "favourite city"} {
		if strings.Contains(everything, said) {
			t.Errorf("a span holds %q", said)
		}
	}
}

// attr is a span attribute's value as text, "" when it has none.
func attr(sp *tracepb.Span, key string) string {
	for _, kv := range sp.Attributes {
		if kv.Key == key {
			switch v := kv.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_IntValue:
				return fmt.Sprint(v.IntValue)
			case *commonpb.AnyValue_BoolValue:
				return fmt.Sprint(v.BoolValue)
			}
			return kv.Value.String()
		}
	}
	return ""
}
