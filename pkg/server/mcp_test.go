package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hectormem/hector/pkg/mcp"
)

// mcpClient connects the SDK's client to /mcp with a credential, and the
// app and user to act for when it names them.
func mcpClient(t *testing.T, url, key, app, user string) (*sdk.ClientSession, error) {
	cs, err := mcp.Remote(t.Context(), url, key, app, user)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func callJSON(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), out); err != nil {
		t.Fatal(err)
	}
}

// The MCP endpoint answers what the REST API answers for the same
// credential, and no more.
func TestMCPOverHTTP(t *testing.T) {
	s := newTestServer(t, nil)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close) // after the clients' cleanups close their streams
	for _, user := range []string{"alice", "bob"} {
		base := "/v1/apps/a/users/" + user
		do(t, s, "POST", base+"/sessions", adminKey, map[string]any{"session_id": user + "-trip"})
		do(t, s, "POST", base+"/sessions/"+user+"-trip/events", adminKey,
			map[string]any{"author": "user", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": user + " plans a trip to Lisbon"}}}})
		do(t, s, "POST", base+"/facts", adminKey, map[string]any{"key": "pet", "value": user + "'s cat"})
	}

	alice, err := mcpClient(t, hs.URL, aliceKey, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var found struct {
		Results []struct {
			SessionID string `json:"session_id"`
			EventID   string `json:"event_id"`
		}
	}
	callJSON(t, alice, "search_memory", map[string]any{"query": "Lisbon trip"}, &found)
	var rest struct {
		Results []struct {
			SessionID string `json:"session_id"`
			EventID   string `json:"event_id"`
		}
	}
	json.Unmarshal(do(t, s, "POST", "/v1/apps/a/users/alice/memory:search", aliceKey, map[string]any{"query": "Lisbon trip"}).Body.Bytes(), &rest)
	if len(found.Results) != 1 || len(rest.Results) != 1 || found.Results[0] != rest.Results[0] || found.Results[0].SessionID != "alice-trip" {
		t.Errorf("search_memory over MCP = %+v, REST = %+v", found, rest)
	}
	var listed struct{ Facts []struct{ Key, Value string } }
	callJSON(t, alice, "memory_list", nil, &listed)
	var restFacts struct{ Facts []struct{ Key, Value string } }
	json.Unmarshal(do(t, s, "GET", "/v1/apps/a/users/alice/facts", aliceKey, nil).Body.Bytes(), &restFacts)
	if !slices.Equal(listed.Facts, restFacts.Facts) || len(listed.Facts) != 1 || listed.Facts[0].Value != "alice's cat" {
		t.Errorf("memory_list = %+v, REST = %+v", listed, restFacts)
	}
	var sessions struct{ Sessions []struct{ ID string } }
	callJSON(t, alice, "list_sessions", nil, &sessions)
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].ID != "alice-trip" {
		t.Errorf("list_sessions = %+v", sessions)
	}
	res, err := alice.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "hector://sessions/alice-trip"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "alice plans a trip") {
		t.Errorf("alice's session resource: %+v, %v", res, err)
	}
	if _, err := alice.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "hector://sessions/bob-trip"}); err == nil {
		t.Error("alice read bob's session")
	}

	// An app credential names the user; it cannot name another app's.
	appA, err := mcpClient(t, hs.URL, appAKey, "", "bob")
	if err != nil {
		t.Fatal(err)
	}
	callJSON(t, appA, "memory_list", nil, &listed)
	if len(listed.Facts) != 1 || listed.Facts[0].Value != "bob's cat" {
		t.Errorf("app a acting for bob lists %+v", listed)
	}
	for name, c := range map[string][3]string{ // key, app, user
		"bob naming alice":     {bobKey, "", "alice"},
		"app b naming app a":   {appBKey, "a", "alice"},
		"app a naming no user": {appAKey, "", ""},
		"no credential":        {"", "a", "alice"},
		"a wrong key":          {"not-a-key-0123456789", "", ""},
		"admin naming no app":  {adminKey, "", "alice"},
	} {
		if _, err := mcpClient(t, hs.URL, c[0], c[1], c[2]); err == nil {
			t.Errorf("%s: connected", name)
		}
	}

	post := func(key, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	if resp := post("", initialize); resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("/mcp without a credential: %s %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := post(aliceKey, initialize[:len(initialize)-1]+`,"padding":"`+strings.Repeat("x", 2<<20)+`"}`); resp.StatusCode < 400 {
		t.Errorf("/mcp with a body over the limit: %s", resp.Status)
	}

	// Each request stands alone: there is no session to hand to another credential.
	if alice.ID() != "" {
		t.Errorf("the server opened a stateful session %q", alice.ID())
	}
	if resp := post(bobKey, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_list","arguments":{}}}`); resp.StatusCode != 200 {
		t.Errorf("a lone tools/call: %s", resp.Status)
	}
}

// erase_user is offered to a credential that may erase the user it acts
// for (an app's, the admin's), never to the user's own; it refuses a
// confirmation that is not the user's ID, and erases with one.
func TestMCPEraseUser(t *testing.T) {
	s := newTestServer(t, nil)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	for _, user := range []string{"alice", "bob"} {
		do(t, s, "POST", "/v1/apps/a/users/"+user+"/facts", adminKey, map[string]any{"key": "pet", "value": user + "'s cat"})
	}
	offered := func(cs *sdk.ClientSession) *sdk.Tool {
		t.Helper()
		tools, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if tool.Name == "erase_user" {
				return tool
			}
		}
		return nil
	}
	alice, err := mcpClient(t, hs.URL, aliceKey, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if offered(alice) != nil {
		t.Error("alice's own credential is offered erase_user")
	}
	if res, err := alice.CallTool(t.Context(), &sdk.CallToolParams{Name: "erase_user", Arguments: map[string]any{"confirm": "alice"}}); err == nil && !res.IsError {
		t.Error("alice's own credential erased her through MCP")
	}

	app, err := mcpClient(t, hs.URL, appAKey, "", "alice")
	if err != nil {
		t.Fatal(err)
	}
	tool := offered(app)
	if tool == nil || tool.Annotations == nil || tool.Annotations.DestructiveHint == nil || !*tool.Annotations.DestructiveHint || tool.Annotations.ReadOnlyHint || tool.OutputSchema == nil {
		t.Fatalf("erase_user for an app credential: %+v", tool)
	}
	res, err := app.CallTool(t.Context(), &sdk.CallToolParams{Name: "erase_user", Arguments: map[string]any{"confirm": "bob"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "nothing was erased") {
		t.Errorf("a confirmation naming another user: %+v, %v", res, err)
	}
	if w := do(t, s, "GET", "/v1/apps/a/users/alice/facts", adminKey, nil); !strings.Contains(w.Body.String(), "alice's cat") {
		t.Fatalf("a refused erasure changed alice: %s", w.Body)
	}
	var receipt struct {
		By       string `json:"by"`
		Verified bool   `json:"verified"`
	}
	callJSON(t, app, "erase_user", map[string]any{"confirm": "alice"}, &receipt)
	if !receipt.Verified || receipt.By != "app-a" {
		t.Errorf("the receipt = %+v", receipt)
	}
	if w := do(t, s, "GET", "/v1/apps/a/users/alice/facts", adminKey, nil); strings.Contains(w.Body.String(), "alice's cat") {
		t.Errorf("alice after erase_user: %s", w.Body)
	}
	if w := do(t, s, "GET", "/v1/apps/a/users/bob/facts", adminKey, nil); !strings.Contains(w.Body.String(), "bob's cat") {
		t.Errorf("bob after alice was erased: %s", w.Body)
	}
	if w := do(t, s, "GET", "/v1/apps/a/users/alice/erasure", adminKey, nil); !strings.Contains(w.Body.String(), `"by":"app-a"`) {
		t.Errorf("the kept receipt: %s", w.Body)
	}
}
