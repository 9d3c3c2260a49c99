package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

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

// Both protocol revisions a client may speak in 2026 work over HTTP, and
// on each every tool has annotations and an output schema, and what each
// returns validates against its schema (checked by a validator other than
// the library that made the schemas).
func TestMCPToolsDescribeThemselves(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			s := newTestServer(t, nil)
			hs := httptest.NewServer(s)
			t.Cleanup(hs.Close)
			u := "/v1/apps/a/users/alice"
			do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": "trip"})
			do(t, s, "POST", u+"/sessions/trip/events", adminKey, map[string]any{"author": "alice",
				"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "a trip to Lisbon in May"}}}})
			do(t, s, "POST", u+"/facts", adminKey, map[string]any{"key": "home", "value": "Lives in Lisbon"})

			headers := mcp.WithHeaders(map[string]string{"Authorization": "Bearer " + appAKey, "X-Hector-User": "alice"})
			client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: headers}},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s, want %s", got, version)
			}
			list, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			args := map[string]map[string]any{
				"search_memory": {"query": "Lisbon"}, "memory_recall": {"key": "home"}, "memory_history": {"key": "home"},
				"memory_store": {"key": "pet", "value": "Has a cat"}, "memory_list": {}, "list_sessions": {},
				"get_session": {"session_id": "trip"}, "memory_forget": {"selector": "key:pet"}, "erase_user": {"confirm": "alice"},
				"record_messages": {"session_id": "desk", "messages": []map[string]any{{"role": "user", "content": "My locker is 12"}}},
			}
			readOnly := map[string]bool{"search_memory": true, "memory_recall": true, "memory_history": true, "memory_list": true, "list_sessions": true, "get_session": true}
			destructive := map[string]bool{"memory_forget": true, "erase_user": true}
			schemas := map[string]*jsonschema.Schema{}
			for _, tool := range list.Tools {
				a := tool.Annotations
				if a == nil || tool.OutputSchema == nil {
					t.Errorf("%s: annotations %+v, output schema %v", tool.Name, a, tool.OutputSchema)
					continue
				}
				if a.ReadOnlyHint != readOnly[tool.Name] || a.DestructiveHint == nil || *a.DestructiveHint != destructive[tool.Name] ||
					a.OpenWorldHint == nil || *a.OpenWorldHint || a.Title == "" {
					t.Errorf("%s: annotations %+v", tool.Name, a)
				}
				if _, ok := args[tool.Name]; !ok {
					t.Errorf("a tool this test does not call: %s", tool.Name)
				}
				raw, _ := json.Marshal(tool.OutputSchema)
				doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
				c := jsonschema.NewCompiler()
				if err := c.AddResource(tool.Name+".json", doc); err != nil {
					t.Fatal(err)
				}
				if schemas[tool.Name], err = c.Compile(tool.Name + ".json"); err != nil {
					t.Errorf("%s: its output schema does not compile: %v", tool.Name, err)
				}
			}
			if len(schemas) != len(args) {
				t.Errorf("%d tools listed, want %d", len(schemas), len(args))
			}
			for _, name := range []string{"search_memory", "memory_recall", "memory_history", "memory_store", "memory_list", "list_sessions", "get_session", "memory_forget", "record_messages", "erase_user"} {
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args[name]})
				if err != nil || res.IsError || res.StructuredContent == nil {
					t.Errorf("%s: %v %+v", name, err, res)
					continue
				}
				raw, _ := json.Marshal(res.StructuredContent)
				v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
				if sch := schemas[name]; sch != nil {
					if err := sch.Validate(v); err != nil {
						t.Errorf("%s returned %s, which its schema refuses: %v", name, raw, err)
					}
				}
				if text := res.Content[0].(*sdk.TextContent).Text; !jsonEqual(text, string(raw)) {
					t.Errorf("%s: its text %s is not its structured content %s", name, text, raw)
				}
			}
		})
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// MCP refuses, as JSON-RPC errors, what REST refuses: an ID holding a lone
// surrogate or an overlong UTF-8 form (the MCP library would have stored
// it as U+FFFD), and a body over the limit (finding 10 of issue 71).
func TestMCPRefusesBadBytesAsJSONRPCErrors(t *testing.T) {
	s := newTestServer(t, nil)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	post := func(body []byte) (int, map[string]any) {
		req, _ := http.NewRequest("POST", hs.URL+"/mcp", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Errorf("the answer to %.60q is not JSON: %v", body, err)
		}
		return resp.StatusCode, out
	}
	call := func(sessionID string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sessions","arguments":{"session_id":"` + sessionID + `"}}}`)
	}
	for name, body := range map[string][]byte{
		"a lone surrogate":      call(`s\ud800`),
		"an overlong solidus":   call("s\xc0\xaf"),
		"a body over the limit": append(call("s"), bytes.Repeat([]byte(" "), 1<<20)...),
	} {
		code, out := post(body)
		rpcErr, _ := out["error"].(map[string]any)
		if code < 400 || code >= 500 || out["jsonrpc"] != "2.0" || rpcErr == nil || rpcErr["message"] == "" {
			t.Errorf("%s: %d %v; want a 4xx JSON-RPC error", name, code, out)
		}
	}
	w := do(t, s, "POST", "/v1/apps/a/users/alice/sessions", aliceKey, []byte(`{"session_id":"s\ud800"}`))
	if w.Code != 400 {
		t.Errorf("REST with a lone surrogate: %d %s", w.Code, w.Body)
	}
}

// docs/mcp.md lists every tool with every argument it takes, the required
// ones in bold (finding 11 of issue 71: a user guessed memory_recall's
// arguments).
func TestMCPDocsNameEveryToolsArguments(t *testing.T) {
	doc, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := regexp.MustCompile("^\\| `(\\w+)` \\| (.*) \\|$").FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[2]
		}
	}
	s := newTestServer(t, nil)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	cs, err := mcpClient(t, hs.URL, appAKey, "", "alice")
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		row, ok := rows[tool.Name]
		if !ok {
			t.Errorf("docs/mcp.md has no row for %s", tool.Name)
			continue
		}
		schema := tool.InputSchema.(map[string]any)
		required := map[string]bool{}
		for _, r := range asSlice(schema["required"]) {
			required[r.(string)] = true
		}
		for name := range schema["properties"].(map[string]any) {
			want := "`" + name + "`"
			if required[name] {
				want = "**" + want + "**"
			}
			if !strings.Contains(row, want) {
				t.Errorf("docs/mcp.md's %s row lacks %s: %q", tool.Name, want, row)
			}
		}
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
