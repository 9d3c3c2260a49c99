package recall_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/recall"
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
	st := &recall.SearchMemoryTool{Memory: recall.Memory{Index: idx}}
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
	hits := out.(*recall.SearchMemoryResult).Results
	if len(hits) != recall.DefaultToolResults {
		t.Errorf("%d results, want the default %d", len(hits), recall.DefaultToolResults)
	}
	for _, h := range hits {
		if !strings.HasPrefix(h.Content, "alice's") {
			t.Errorf("alice's search returned %q", h.Content[:20])
		}
		if n := len([]rune(h.Content)); n > recall.DefaultToolContentLen+1 || !strings.HasSuffix(h.Content, "…") {
			t.Errorf("content of %d characters, not trimmed to %d", n, recall.DefaultToolContentLen)
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
	small := &recall.SearchMemoryTool{Memory: recall.Memory{Index: idx}, MaxResults: 2, MaxContent: 10}
	out, _ = small.Call(t.Context(), tool.Invocation{AppName: "app", UserID: "bob"}, json.RawMessage(`{"query":"garden"}`))
	// The snippet is around the words the model asked for, not the message's start.
	if hits := out.(*recall.SearchMemoryResult).Results; len(hits) != 2 || !strings.Contains(hits[0].Content, "garden") || utf8.RuneCountInString(hits[0].Content) > 12 {
		t.Errorf("MaxResults 2, MaxContent 10: %+v", hits)
	}
}

// The model narrows a search with filters and prefers recent messages by
// arguments; a session ID cannot reach another user's session, and
// arguments that mean nothing are refused with what was wrong.
func TestSearchMemoryToolFilters(t *testing.T) {
	idx, err := index.NewKeyword()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
	for _, user := range []string{"alice", "bob"} {
		resp, _ := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: user + "-s"})
		for i, e := range []struct {
			author, role, text string
			at                 time.Time
		}{
			{"Alice", session.RoleUser, "I live on Elm Street, the Elm Street flat", day(1)},
			{"agent", session.RoleAssistant, "Noted: Elm Street", day(2)},
			{"Alice", session.RoleUser, "I moved to a street by the river", day(20)},
		} {
			ev := &session.Event{ID: fmt.Sprintf("%s-%d", user, i), Author: e.author, Timestamp: e.at, Message: session.NewTextMessage(e.role, e.text)}
			if err := sessions.AppendEvent(ctx, resp.Session, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Index(ctx, resp.Session); err != nil {
			t.Fatal(err)
		}
	}
	st := &recall.SearchMemoryTool{Memory: recall.Memory{Index: idx}}
	alice := tool.Invocation{AppName: "app", UserID: "alice"}
	found := func(args string) []string {
		t.Helper()
		out, err := st.Call(ctx, alice, json.RawMessage(args))
		if err != nil {
			t.Fatalf("Call(%s): %v", args, err)
		}
		var ids []string
		for _, h := range out.(*recall.SearchMemoryResult).Results {
			ids = append(ids, h.EventID)
		}
		return ids
	}
	for args, want := range map[string][]string{
		`{"query":"Elm Street"}`:                                   {"alice-0", "alice-1", "alice-2"},
		`{"query":"Elm Street","role":"assistant"}`:                {"alice-1"},
		`{"query":"Elm Street","author":"Alice"}`:                  {"alice-0", "alice-2"},
		`{"query":"Elm Street","after":"2026-03-02"}`:              {"alice-1", "alice-2"},
		`{"query":"Elm Street","before":"2026-03-02T00:00:00Z"}`:   {"alice-0"},
		`{"query":"Elm Street","session_id":"alice-s"}`:            {"alice-0", "alice-1", "alice-2"},
		`{"query":"Elm Street","session_id":"bob-s"}`:              nil,
		`{"query":"street","author":"Alice","prefer_recent":true}`: {"alice-2", "alice-0"},
	} {
		got := found(args)
		if !strings.Contains(args, "prefer_recent") {
			slices.Sort(got)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Call(%s) found %q, want %q", args, got, want)
		}
	}
	for _, args := range []string{
		`{"query":"x","role":"admin"}`, `{"query":"x","after":"last week"}`, `{"query":"x","after":"2026-03-05","before":"2026-03-01"}`,
		`{"query":"x","prefer_recent":"yes"}`, `{"query":"x","user":"bob"}`,
	} {
		if _, err := st.Call(ctx, alice, json.RawMessage(args)); err == nil {
			t.Errorf("Call(%s): no error", args)
		}
	}
}
