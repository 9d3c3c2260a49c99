package index_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/tool"
)

func TestSearchMemoryTool(t *testing.T) {
	idx, err := index.NewKeyword()
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.NewInMemoryService()
	for _, user := range []string{"alice", "bob"} {
		resp, _ := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: user})
		for i := range 8 {
			text := fmt.Sprintf("%s's secret number %d about the garden %s", user, i, strings.Repeat("long ", 200))
			sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)})
		}
		if err := idx.Index(t.Context(), resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	st := &index.SearchMemoryTool{Index: idx}
	if st.Name() != "search_memory" || !strings.Contains(st.Description(), "past conversations") || !strings.Contains(st.Description(), "names") {
		t.Errorf("tool is %q: %q", st.Name(), st.Description())
	}
	schema, _ := json.Marshal(st.Parameters())
	if !strings.Contains(string(schema), `"required":["query"]`) || !strings.Contains(string(schema), `"query":{`) {
		t.Errorf("parameters schema = %s", schema)
	}

	alice := tool.Invocation{AppName: "app", UserID: "alice", SessionID: "x"}
	out, err := st.Call(t.Context(), alice, json.RawMessage(`{"query":"secret garden bob"}`))
	if err != nil {
		t.Fatal(err)
	}
	hits := out.(map[string]any)["results"].([]index.MemoryHit)
	if len(hits) != index.DefaultToolResults {
		t.Errorf("%d results, want the default %d", len(hits), index.DefaultToolResults)
	}
	for _, h := range hits {
		if !strings.HasPrefix(h.Content, "alice's") {
			t.Errorf("alice's search returned %q", h.Content[:20])
		}
		if n := len([]rune(h.Content)); n > index.DefaultToolContentLen+1 || !strings.HasSuffix(h.Content, "…") {
			t.Errorf("content of %d characters, not trimmed to %d", n, index.DefaultToolContentLen)
		}
		if h.SessionID == "" || h.EventID == "" || h.Author != "user" || h.Score <= 0 {
			t.Errorf("hit without provenance: %+v", h)
		}
	}
	// The model cannot widen the scope, nor call without a query.
	for _, args := range []string{`{"query":"secret","user_id":"bob"}`, `{"query":"secret","app_name":"other"}`, `{}`, `{"query":"  "}`, `not json`} {
		if _, err := st.Call(t.Context(), alice, json.RawMessage(args)); err == nil {
			t.Errorf("Call(%s): no error", args)
		}
	}
	small := &index.SearchMemoryTool{Index: idx, MaxResults: 2, MaxContent: 10}
	out, _ = small.Call(t.Context(), tool.Invocation{AppName: "app", UserID: "bob"}, json.RawMessage(`{"query":"garden"}`))
	if hits := out.(map[string]any)["results"].([]index.MemoryHit); len(hits) != 2 || hits[0].Content != "bob's secr…" {
		t.Errorf("MaxResults 2, MaxContent 10: %+v", hits)
	}
}
