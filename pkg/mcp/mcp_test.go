package mcp_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/facts/factstest"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/mcp"
	"github.com/hectormem/hector/pkg/recall"
	"github.com/hectormem/hector/pkg/session"
)

// memory is alice's and bob's memory: three sessions each, the same words.
type memory struct {
	svcs mcp.Services
}

func newMemory(t *testing.T) *memory {
	sessions := session.NewInMemoryService()
	idx, err := index.NewKeyword(index.WithSessions(sessions))
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	fs, err := facts.NewInMemoryService(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"alice", "bob"} {
		for i := range 3 {
			resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: user, SessionID: fmt.Sprintf("%s-%d", user, i)})
			if err != nil {
				t.Fatal(err)
			}
			for j := range 5 {
				text := fmt.Sprintf("%s talks about the lighthouse, message %d of session %d", user, j, i)
				if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := idx.Index(t.Context(), resp.Session); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := fs.Store(t.Context(), facts.UserScope("app", user), facts.StoreRequest{Key: "pet", Value: user + "'s cat"}); err != nil {
			t.Fatal(err)
		}
	}
	return &memory{mcp.Services{Sessions: sessions, Index: idx, Facts: fs}}
}

// connect runs a server for who and returns a client session on it.
func connect(t *testing.T, svcs mcp.Services, who mcp.Identity) *sdk.ClientSession {
	server := mcp.NewServer(svcs, mcp.Fixed(who))
	serverEnd, clientEnd := sdk.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), serverEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), clientEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and decodes its JSON result into out; it returns the
// error text of a tool error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if res.IsError {
		return text
	}
	if out != nil {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			t.Fatalf("%s: %v in %s", name, err, text)
		}
	}
	return ""
}

func TestToolsAndResources(t *testing.T) {
	m := newMemory(t)
	cs := connect(t, m.svcs, mcp.Identity{App: "app", User: "alice"})
	ctx := t.Context()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if len(tl.Description) < 40 {
			t.Errorf("tool %s's description %q is too thin for a model to use it right", tl.Name, tl.Description)
		}
	}
	slices.Sort(names)
	want := []string{"get_session", "list_sessions", "memory_forget", "memory_history", "memory_list", "memory_recall", "memory_store", "record_messages", "search_memory"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %q, want %q", names, want)
	}

	// search_memory: what the index answers for alice.
	var found struct{ Results []recall.MemoryHit }
	call(t, cs, "search_memory", map[string]any{"query": "lighthouse"}, &found)
	direct, err := m.svcs.Index.Search(ctx, &index.SearchRequest{Query: "lighthouse", AppName: "app", UserID: "alice", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Results) != len(direct.Results) || len(found.Results) == 0 {
		t.Fatalf("search_memory found %d, the index %d", len(found.Results), len(direct.Results))
	}
	for i, r := range found.Results {
		if r.EventID != direct.Results[i].EventID || r.SessionID != direct.Results[i].SessionID || r.Timestamp.IsZero() || r.Score <= 0 {
			t.Errorf("result %d = %+v, want %+v with time and score", i, r, direct.Results[i])
		}
	}

	// Facts through the one policy: stored, recalled, listed, refused, forgotten.
	if msg := call(t, cs, "memory_store", map[string]any{"key": "editor", "value": "vim"}, nil); msg != "" {
		t.Fatalf("memory_store: %s", msg)
	}
	var recalled struct{ Facts []facts.Fact }
	call(t, cs, "memory_recall", map[string]any{"key": "editor"}, &recalled)
	if len(recalled.Facts) != 1 || recalled.Facts[0].Value != "vim" || recalled.Facts[0].Source.By != "mcp" {
		t.Errorf("memory_recall = %+v, want vim, written through MCP", recalled)
	}
	// A new value supersedes the old; memory_history shows both, and
	// as_of recalls what held before.
	first := recalled.Facts[0].ValidFrom
	if msg := call(t, cs, "memory_store", map[string]any{"key": "editor", "value": "helix"}, nil); msg != "" {
		t.Fatalf("memory_store: %s", msg)
	}
	var history struct{ Versions []facts.Fact }
	call(t, cs, "memory_history", map[string]any{"key": "editor"}, &history)
	if len(history.Versions) != 2 || history.Versions[0].Value != "vim" || history.Versions[0].SupersededBy != history.Versions[1].ID {
		t.Errorf("memory_history = %+v", history)
	}
	call(t, cs, "memory_recall", map[string]any{"key": "editor", "as_of": first.Format(time.RFC3339Nano)}, &recalled)
	if len(recalled.Facts) != 1 || recalled.Facts[0].Value != "vim" {
		t.Errorf("memory_recall as of the first value = %+v", recalled)
	}
	var listed struct {
		Note  string
		Facts []facts.Fact
	}
	call(t, cs, "memory_list", nil, &listed)
	stored, _ := m.svcs.Facts.List(ctx, facts.UserScope("app", "alice"), "", "")
	if len(listed.Facts) != 2 || len(stored) != 2 || !strings.Contains(listed.Note, "not instructions") {
		t.Errorf("memory_list = %+v, the store holds %d", listed, len(stored))
	}
	if msg := call(t, cs, "memory_store", map[string]any{"key": "k", "value": "v", "category": "system"}, nil); !strings.Contains(msg, "category_reserved") {
		t.Errorf("a refused store says %q, want the rule's code", msg)
	}
	var forgot struct{ Removed int }
	call(t, cs, "memory_forget", map[string]any{"selector": "key:editor"}, &forgot)
	if forgot.Removed != 1 {
		t.Errorf("memory_forget removed %d", forgot.Removed)
	}

	// Sessions: listed as the service lists them, read a page at a time.
	var page struct {
		Sessions      []struct{ ID string }
		NextPageToken string `json:"next_page_token"`
	}
	call(t, cs, "list_sessions", map[string]any{"page_size": 2}, &page)
	listResp, _ := m.svcs.Sessions.List(ctx, &session.ListRequest{AppName: "app", UserID: "alice", PageSize: 2})
	if len(page.Sessions) != 2 || page.Sessions[0].ID != listResp.Sessions[0].ID() || page.NextPageToken == "" {
		t.Errorf("list_sessions = %+v", page)
	}
	var events struct {
		Events []struct {
			Seq     int64
			Message *session.Message
		}
		BeforeSeq int64 `json:"before_seq"`
	}
	call(t, cs, "get_session", map[string]any{"session_id": "alice-1", "limit": 3}, &events)
	if len(events.Events) != 3 || events.Events[0].Seq != 3 || events.Events[2].Seq != 5 || events.BeforeSeq != 3 {
		t.Fatalf("get_session's last 3 = %+v", events)
	}
	before := events.BeforeSeq
	events.Events, events.BeforeSeq = nil, 0
	call(t, cs, "get_session", map[string]any{"session_id": "alice-1", "limit": 3, "before_seq": before}, &events)
	if len(events.Events) != 2 || events.Events[0].Seq != 1 || events.BeforeSeq != 0 || !strings.Contains(events.Events[0].Message.Text(), "message 0") {
		t.Errorf("get_session's page before seq 3 = %+v", events)
	}

	// Resources.
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "hector://my-memory"})
	if err != nil {
		t.Fatal(err)
	}
	var summary facts.Summary
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &summary); err != nil || summary.Total != 1 || !slices.Equal(summary.RecentKeys, []string{"pet"}) {
		t.Errorf("my-memory = %s (%v)", res.Contents[0].Text, err)
	}
	if strings.Contains(res.Contents[0].Text, "alice's cat") {
		t.Errorf("my-memory shows a value: %s", res.Contents[0].Text)
	}
	res, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "hector://sessions/alice-2"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "message 4 of session 2") {
		t.Errorf("sessions/alice-2 = %v, %v", res, err)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "hector://sessions/{+id}" {
		t.Errorf("resource templates = %+v, %v", templates, err)
	}
}

// Bob's session reaches nothing of alice's, whatever the arguments say.
func TestIsolation(t *testing.T) {
	m := newMemory(t)
	bob := connect(t, m.svcs, mcp.Identity{App: "app", User: "bob"})
	var found struct {
		Results []recall.MemoryHit
		Facts   []recall.FactHit
	}
	call(t, bob, "search_memory", map[string]any{"query": "alice lighthouse cat"}, &found)
	if len(found.Facts) != 1 || found.Facts[0].Value != "bob's cat" {
		t.Errorf("bob's search found the facts %+v, want his cat alone", found.Facts)
	}
	for _, r := range found.Results {
		if !strings.HasPrefix(r.SessionID, "bob-") {
			t.Errorf("bob's search found %+v", r)
		}
	}
	if msg := call(t, bob, "search_memory", map[string]any{"query": "x", "user_id": "alice"}, nil); msg == "" {
		t.Error("search_memory accepted a user_id argument")
	}
	// A filter narrows bob's memory: naming alice's session finds nothing,
	// naming his own finds that session only.
	call(t, bob, "search_memory", map[string]any{"query": "lighthouse", "session_id": "alice-1"}, &found)
	if len(found.Results) != 0 {
		t.Errorf("bob's search of alice's session found %+v", found.Results)
	}
	call(t, bob, "search_memory", map[string]any{"query": "lighthouse", "session_id": "bob-1", "role": "user", "prefer_recent": true}, &found)
	if len(found.Results) == 0 {
		t.Error("bob's search of his own session found nothing")
	}
	for _, r := range found.Results {
		if r.SessionID != "bob-1" {
			t.Errorf("bob's search of session bob-1 found %+v", r)
		}
	}
	if msg := call(t, bob, "get_session", map[string]any{"session_id": "alice-0"}, nil); !strings.Contains(msg, "no session") {
		t.Errorf("bob reading alice's session: %q, want not found", msg)
	}
	if _, err := bob.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "hector://sessions/alice-0"}); err == nil {
		t.Error("bob read alice's session as a resource")
	}
	var recalled struct{ Facts []facts.Fact }
	call(t, bob, "memory_recall", map[string]any{"key": "pet"}, &recalled)
	if len(recalled.Facts) != 1 || recalled.Facts[0].Value != "bob's cat" {
		t.Errorf("bob recalls %+v", recalled)
	}
	var forgot struct{ Removed int }
	call(t, bob, "memory_forget", map[string]any{"selector": "all"}, &forgot)
	if f, err := m.svcs.Facts.Recall(t.Context(), facts.UserScope("app", "alice"), "pet"); err != nil || f.Value != "alice's cat" {
		t.Errorf("after bob forgot all, alice's fact is %+v, %v", f, err)
	}
}

// With write_policy off the model gets no tool that writes facts.
func TestReadOnlyFacts(t *testing.T) {
	m := newMemory(t)
	m.svcs.WritePolicy = facts.WriteOff
	cs := connect(t, m.svcs, mcp.Identity{App: "app", User: "alice"})
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "memory_store" || tl.Name == "memory_forget" || tl.Name == "record_messages" {
			t.Errorf("read-only facts offer %s", tl.Name)
		}
	}
}

// memory_store refuses what REST refuses, with the same codes, and writes
// nothing.
func TestRefusals(t *testing.T) {
	m := newMemory(t)
	cs := connect(t, m.svcs, mcp.Identity{App: "app", User: "alice"})
	for code, req := range factstest.Refusals {
		args := map[string]any{"key": req.Key, "value": req.Value, "ttl_seconds": int64(req.TTL.Seconds())}
		if req.Category != "" {
			args["category"] = req.Category
		}
		if req.Tags != nil {
			args["tags"] = req.Tags
		}
		if msg := call(t, cs, "memory_store", args, nil); !strings.Contains(msg, "("+code+")") {
			t.Errorf("%s: memory_store said %q", code, msg)
		}
	}
	if fs, _ := m.svcs.Facts.List(t.Context(), facts.UserScope("app", "alice"), "", ""); len(fs) != 1 {
		t.Errorf("after refusals alice has %d facts, want her 1", len(fs))
	}
}

// Bad calls are errors that say what was wrong, and change nothing.
func TestBadInput(t *testing.T) {
	m := newMemory(t)
	cs := connect(t, m.svcs, mcp.Identity{App: "app", User: "alice"})
	if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "memory_delete_everything"}); err == nil || !strings.Contains(err.Error(), "memory_delete_everything") {
		t.Errorf("an unknown tool: %v", err)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"memory_store", map[string]any{"key": "k", "value": 5}, "value"},
		{"memory_store", map[string]any{"key": "k"}, "value"},
		{"memory_store", map[string]any{"key": "k", "value": strings.Repeat("v", 1<<20)}, "value_too_long"},
		{"search_memory", map[string]any{}, "query"},
		{"search_memory", map[string]any{"query": []string{"x"}}, "query"},
		{"search_memory", map[string]any{"query": "x", "role": "owner"}, "role"},
		{"search_memory", map[string]any{"query": "x", "after": "last week"}, "after"},
		{"search_memory", map[string]any{"query": "x", "prefer_recent": "yes"}, "prefer_recent"},
		{"get_session", map[string]any{}, "session_id"},
		{"get_session", map[string]any{"session_id": "alice-0", "limit": "ten"}, "limit"},
		{"get_session", map[string]any{"session_id": "alice-0", "limit": 1000}, "limit"},
		{"list_sessions", map[string]any{"page_size": -1}, "page_size"},
		{"list_sessions", map[string]any{"page_token": "garbage"}, "token"},
		{"memory_forget", map[string]any{"selector": "everything"}, "selector"},
		{"memory_history", map[string]any{}, "key"},
		{"memory_recall", map[string]any{"key": "editor", "as_of": "last week"}, "as_of"},
		{"record_messages", map[string]any{"session_id": "   ", "messages": []any{map[string]any{"role": "user", "content": "x"}}}, "only spaces"},
		{"record_messages", map[string]any{"session_id": "s\u202e", "messages": []any{map[string]any{"role": "user", "content": "x"}}}, "U+202E"},
		{"record_messages", map[string]any{"session_id": "s", "messages": []any{map[string]any{"role": "user", "content": "x", "author": "ali\nce\u0000"}}}, "author"},
	} {
		msg := toolError(t, cs, tc.tool, tc.args)
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s %v: %q, want it to name %q", tc.tool, tc.args, msg, tc.want)
		}
	}
	// No tool takes an identity from its arguments: one is an unknown argument.
	for _, name := range []string{"search_memory", "memory_store", "memory_recall", "memory_history", "memory_forget", "memory_list", "list_sessions", "get_session"} {
		if msg := toolError(t, cs, name, map[string]any{"user_id": "bob", "query": "x", "key": "k", "value": "v", "selector": "all", "session_id": "bob-0"}); msg == "" {
			t.Errorf("%s obeyed or ignored a user_id argument", name)
		}
	}
	if fs, _ := m.svcs.Facts.List(t.Context(), facts.UserScope("app", "alice"), "", ""); len(fs) != 1 {
		t.Errorf("after bad calls alice has %d facts, want her 1", len(fs))
	}
	if f, err := m.svcs.Facts.Recall(t.Context(), facts.UserScope("app", "bob"), "pet"); err != nil || f.Value != "bob's cat" {
		t.Errorf("bob's fact after alice's bad calls: %+v, %v", f, err)
	}
}

// toolError calls a tool that must fail, and returns what it said: a
// tool error's text, or a protocol error's.
func toolError(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err.Error()
	}
	if !res.IsError {
		return ""
	}
	return res.Content[0].(*sdk.TextContent).Text
}

// A session's resource reads any session ID, percent-encoded as the
// template expands it, or as written where a URI may hold it: gateway
// chat:<id> sessions, spaces, non-ASCII, slashes. What it returns is one user's, so it is marked private to
// that user's client.
func TestSessionResourcesOfAnyID(t *testing.T) {
	m := newMemory(t)
	sessions := m.svcs.Sessions
	for _, id := range []string{"chat:42", "a trip to Lisbon", "café/été", "100%"} {
		resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "alice", SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		if err := sessions.AppendEvent(t.Context(), resp.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "in session "+id)}); err != nil {
			t.Fatal(err)
		}
	}
	cs := connect(t, m.svcs, mcp.Identity{App: "app", User: "alice"})
	for _, id := range []string{"chat:42", "a trip to Lisbon", "café/été", "100%"} {
		// As a path segment is escaped, and as RFC 6570 expands {id}, which escapes ':' too.
		uris := []string{"hector://sessions/" + url.PathEscape(id), "hector://sessions/" + strings.ReplaceAll(url.PathEscape(id), ":", "%3A")}
		if id == "chat:42" { // what a URI may hold as it is, it may be sent as it is
			uris = append(uris, "hector://sessions/"+id)
		}
		for _, uri := range uris {
			res, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri})
			if err != nil {
				t.Errorf("%s: %v", uri, err)
				continue
			}
			if !strings.Contains(res.Contents[0].Text, "in session "+id) {
				t.Errorf("%s = %s", uri, res.Contents[0].Text)
			}
			if res.CacheScope != "private" {
				t.Errorf("%s: cacheScope %q, want private (one user's data)", uri, res.CacheScope)
			}
		}
	}
	res, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "hector://my-memory"})
	if err != nil || res.CacheScope != "private" {
		t.Errorf("my-memory: cacheScope %q, %v", res.CacheScope, err)
	}
}

// An MCP client records a conversation's turns, and search_memory finds
// them in a later one, with a limit as REST has; never another user's.
func TestRecordThenRecall(t *testing.T) {
	m := newMemory(t)
	alice := connect(t, m.svcs, mcp.Identity{App: "app", User: "alice"})
	var rec struct {
		SessionID string `json:"session_id"`
		Created   bool
		Appended  int
		LastSeq   int64 `json:"last_seq"`
	}
	turn := map[string]any{"session_id": "desktop-1", "messages": []map[string]any{
		{"role": "user", "content": "My sister Ines lives in Coimbra"}, {"role": "assistant", "content": "Noted: Ines, Coimbra."}}}
	if msg := call(t, alice, "record_messages", turn, &rec); msg != "" || !rec.Created || rec.Appended != 2 || rec.LastSeq != 2 {
		t.Fatalf("record_messages: %s %+v", msg, rec)
	}
	turn["messages"] = []map[string]any{{"role": "user", "content": "She has a cat called Bolacha", "author": "alice"}}
	if msg := call(t, alice, "record_messages", turn, &rec); msg != "" || rec.Created || rec.LastSeq != 3 {
		t.Fatalf("the next turn: %s %+v", msg, rec)
	}
	var found struct{ Results []recall.MemoryHit }
	call(t, alice, "search_memory", map[string]any{"query": "Ines Coimbra sister"}, &found)
	if len(found.Results) == 0 || !strings.Contains(found.Results[0].Content, "Coimbra") || found.Results[0].SessionID != "desktop-1" {
		t.Errorf("searching what was recorded: %+v", found)
	}
	call(t, alice, "search_memory", map[string]any{"query": "lighthouse", "limit": 2}, &found)
	if len(found.Results) != 2 {
		t.Errorf("search_memory with limit 2: %d results", len(found.Results))
	}
	if msg := call(t, alice, "search_memory", map[string]any{"query": "lighthouse", "limit": 50}, nil); !strings.Contains(msg, "limit") {
		t.Errorf("a limit over the tool's most: %q", msg)
	}
	bob := connect(t, m.svcs, mcp.Identity{App: "app", User: "bob"})
	call(t, bob, "search_memory", map[string]any{"query": "Ines Coimbra Bolacha"}, &found)
	for _, r := range found.Results {
		if strings.Contains(r.Content, "Coimbra") || strings.Contains(r.Content, "Bolacha") {
			t.Errorf("bob finds alice's recorded turn: %+v", r)
		}
	}
	for _, bad := range []map[string]any{
		{"session_id": "s", "messages": []map[string]any{}},
		{"session_id": "s", "messages": []map[string]any{{"role": "system", "content": "x"}}},
		{"session_id": "s", "messages": []map[string]any{{"role": "user", "content": "  "}}},
		{"session_id": "", "messages": []map[string]any{{"role": "user", "content": "x"}}},
		{"session_id": "a\nb", "messages": []map[string]any{{"role": "user", "content": "x"}}},
	} {
		if msg := call(t, alice, "record_messages", bad, nil); msg == "" {
			t.Errorf("record_messages(%v): no error", bad)
		}
	}
}
