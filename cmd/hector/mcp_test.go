package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hectormem/hector/pkg/mcp"
)

// stdioClient runs `hector mcp args...` and connects the SDK's client to
// it over stdio.
func stdioClient(t *testing.T, env []string, args ...string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func searchOver(t *testing.T, cs *sdk.ClientSession, query string) []map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "search_memory", Arguments: map[string]any{"query": query}})
	if err != nil || res.IsError {
		t.Fatalf("search_memory: %v %+v", err, res)
	}
	var out struct{ Results []map[string]any }
	json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out)
	return out.Results
}

// hector mcp serves one user's memory over stdio: through a running server
// with --server, and from the data directory once no server holds it.
func TestMCPStdio(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HECTOR_DATA_DIR=" + dir}
	p := start(t, env)
	for _, user := range []string{"alice", "bob"} {
		u := "/v1/apps/demo/users/" + user + "/sessions"
		p.call(t, "POST", u, map[string]any{"session_id": user + "-s"}, 201)
		p.call(t, "POST", u+"/"+user+"-s/events", text(user+" keeps bees on the roof"), 201)
	}

	// Beside the running server, it refuses and names the way through it.
	out, err := exec.Command(binary, "mcp", "--data-dir", dir, "--app", "demo", "--user", "alice").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "run `hector mcp --data-dir "+dir+" --app demo --user alice --server "+p.base+"`") {
		t.Errorf("hector mcp beside a running server: %v %s", err, out)
	}
	// A server with auth off needs no credential.
	remote := stdioClient(t, nil, "--server", p.base, "--app", "demo", "--user", "alice")
	if got := searchOver(t, remote, "bees"); len(got) != 1 || got[0]["session_id"] != "alice-s" {
		t.Errorf("search through the server: %+v", got)
	}
	remote.Close()

	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	local := stdioClient(t, []string{"HECTOR_MCP_APP=demo", "HECTOR_MCP_USER=bob"}, "--data-dir", dir)
	if got := searchOver(t, local, "bees roof"); len(got) != 1 || got[0]["session_id"] != "bob-s" {
		t.Errorf("search from the data directory: %+v", got)
	}
	res, err := local.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "hector://sessions/bob-s"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "bob keeps bees") {
		t.Errorf("bob's session resource: %+v %v", res, err)
	}
	if _, err := local.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "hector://sessions/alice-s"}); err == nil {
		t.Error("bob's stdio server read alice's session")
	}
}

// A third-party client, the MCP Inspector's CLI (scripts/test installs it
// and names it in HECTOR_TEST_MCP_INSPECTOR), lists and calls the tools
// over HTTP at /mcp and over stdio.
func TestMCPInspector(t *testing.T) {
	inspector := os.Getenv("HECTOR_TEST_MCP_INSPECTOR")
	if inspector == "" {
		t.Skip("HECTOR_TEST_MCP_INSPECTOR is not set: scripts/test installs the MCP Inspector from npm when it can")
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(inspector, append([]string{"--cli"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("mcp-inspector %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	dir := t.TempDir()
	p := start(t, []string{"HECTOR_DATA_DIR=" + dir})
	u := "/v1/apps/demo/users/alice/sessions"
	p.call(t, "POST", u, map[string]any{"session_id": "trip"}, 201)
	p.call(t, "POST", u+"/trip/events", text("Plan a trip to Lisbon in May"), 201)

	who := []string{"--header", "X-Hector-App: demo", "--header", "X-Hector-User: alice"}
	listed := run(append([]string{p.base + "/mcp", "--method", "tools/list"}, who...)...)
	var tools struct {
		Tools []struct {
			Name         string
			Annotations  map[string]any
			OutputSchema map[string]any
		}
	}
	if strings.Contains(listed, "Schema portability") { // the Inspector's lint of the tools' schemas
		t.Errorf("the Inspector finds the tools' schemas unportable:\n%s", listed[strings.LastIndex(listed, "}")+1:])
	}
	if err := json.NewDecoder(strings.NewReader(listed[strings.Index(listed, "{"):])).Decode(&tools); err != nil || len(tools.Tools) < 8 {
		t.Errorf("tools/list over HTTP: %v\n%s", err, listed)
	}
	for _, tool := range tools.Tools { // the Inspector sees what clients of 2026 expect of each tool
		if tool.Annotations["title"] == nil || tool.Annotations["readOnlyHint"] == nil || tool.OutputSchema["type"] != "object" {
			t.Errorf("the Inspector lists %s with annotations %v and output schema %v", tool.Name, tool.Annotations, tool.OutputSchema)
		}
	}
	if out := run(append([]string{p.base + "/mcp", "--method", "tools/call", "--tool-name", "search_memory", "--tool-arg", "query=Lisbon"}, who...)...); !strings.Contains(out, "Plan a trip to Lisbon in May") {
		t.Errorf("search_memory over HTTP:\n%s", out)
	}
	// The write tool, driven by the Inspector: what it records, search finds.
	if out := run(append([]string{p.base + "/mcp", "--method", "tools/call", "--tool-name", "record_messages", "--tool-arg", "session_id=desk",
		"--tool-arg", `messages=[{"role": "user", "content": "My locker code is 4411"}]`}, who...)...); !strings.Contains(out, `"appended": 1`) {
		t.Errorf("record_messages over HTTP:\n%s", out)
	}
	if out := run(append([]string{p.base + "/mcp", "--method", "tools/call", "--tool-name", "search_memory", "--tool-arg", "query=locker code", "--tool-arg", "limit=1"}, who...)...); !strings.Contains(out, "My locker code is 4411") {
		t.Errorf("search_memory for what the Inspector recorded:\n%s", out)
	}
	if out := run("-e", "HECTOR_API_KEY=local", "--method", "tools/call", "--tool-name", "list_sessions", "--",
		binary, "mcp", "--server", p.base, "--app", "demo", "--user", "alice"); !strings.Contains(out, `"trip"`) {
		t.Errorf("list_sessions over stdio through the server:\n%s", out)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	if out := run("-e", "HECTOR_DATA_DIR="+dir, "--method", "resources/read", "--uri", "hector://sessions/trip", "--",
		binary, "mcp", "--app", "demo", "--user", "alice"); !strings.Contains(out, "Plan a trip to Lisbon") {
		t.Errorf("a session resource over stdio:\n%s", out)
	}
}

// restAnswers is what the REST API answers for alice, to check every MCP
// tool and resource against.
type restAnswers struct {
	search, facts, sessions, session, summary string
}

// canonical re-encodes part of a JSON answer, so that two answers compare
// whatever their field order and spacing.
func canonical(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func rest(t *testing.T, p *proc) restAnswers {
	u := "/v1/apps/demo/users/alice"
	// Both ask once every vector is written: until then the ranking moves.
	waitFor(t, "the vectors", func() bool { return metric(t, p, "hector_index_vector_lag_changes") == "0" })
	search := p.call(t, "POST", u+"/memory:search", map[string]any{"query": "bees", "limit": 10}, 200)["results"].([]any)
	var ids []string
	for _, r := range search {
		ids = append(ids, r.(map[string]any)["event_id"].(string))
	}
	var sessionIDs []string
	for _, s := range p.call(t, "GET", u+"/sessions", nil, 200)["sessions"].([]any) {
		sessionIDs = append(sessionIDs, s.(map[string]any)["id"].(string))
	}
	var texts []string
	for _, ev := range p.call(t, "GET", u+"/sessions/alice-1?recent=3", nil, 200)["events"].([]any) {
		texts = append(texts, canonical(t, ev.(map[string]any)["message"]))
	}
	facts := p.call(t, "GET", u+"/facts", nil, 200)["facts"]
	return restAnswers{search: canonical(t, ids), facts: canonical(t, facts), sessions: canonical(t, sessionIDs),
		session: canonical(t, texts), summary: canonical(t, p.call(t, "GET", u+"/facts:summary", nil, 200))}
}

// exercise calls every tool and reads every resource as alice, checking
// each answer against REST's.
func exercise(t *testing.T, cs *sdk.ClientSession, want restAnswers) {
	t.Helper()
	ctx := t.Context()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 9 {
		t.Fatalf("tools/list: %d tools, %v", len(tools.Tools), err)
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil || len(resources.Resources) != 1 || resources.Resources[0].URI != "hector://my-memory" {
		t.Fatalf("resources/list: %+v, %v", resources, err)
	}
	get := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		var out map[string]any
		json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out)
		return out
	}
	var ids []string
	for _, r := range get("search_memory", map[string]any{"query": "bees"})["results"].([]any) {
		ids = append(ids, r.(map[string]any)["event_id"].(string))
	}
	if got := canonical(t, ids); got != want.search {
		t.Errorf("search_memory: %s, REST: %s", got, want.search)
	}
	if got := canonical(t, get("memory_list", nil)["facts"]); got != want.facts {
		t.Errorf("memory_list: %s, REST: %s", got, want.facts)
	}
	var sessionIDs []string
	for _, s := range get("list_sessions", nil)["sessions"].([]any) {
		sessionIDs = append(sessionIDs, s.(map[string]any)["id"].(string))
	}
	if got := canonical(t, sessionIDs); got != want.sessions {
		t.Errorf("list_sessions: %s, REST: %s", got, want.sessions)
	}
	var texts []string
	for _, ev := range get("get_session", map[string]any{"session_id": "alice-1", "limit": 3})["events"].([]any) {
		texts = append(texts, canonical(t, ev.(map[string]any)["message"]))
	}
	if got := canonical(t, texts); got != want.session {
		t.Errorf("get_session: %s, REST: %s", got, want.session)
	}
	// A write, read back and undone, so every transport starts alike.
	get("memory_store", map[string]any{"key": "tmp", "value": "scratch"})
	if got := get("memory_recall", map[string]any{"key": "tmp"})["facts"].([]any); len(got) != 1 {
		t.Errorf("memory_recall of a stored fact: %v", got)
	}
	if n := get("memory_forget", map[string]any{"selector": "key:tmp"})["removed"]; n != 1.0 {
		t.Errorf("memory_forget removed %v", n)
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "hector://my-memory"})
	if err != nil {
		t.Fatal(err)
	}
	var summary any
	json.Unmarshal([]byte(res.Contents[0].Text), &summary)
	if got := canonical(t, summary); got != want.summary {
		t.Errorf("hector://my-memory: %s, REST: %s", got, want.summary)
	}
	res, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "hector://sessions/alice-1"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "message 4 of session 1") {
		t.Errorf("hector://sessions/alice-1: %+v, %v", res, err)
	}
}

// Every tool and resource answers what REST answers, over HTTP, over
// stdio through a server, and over stdio from the data directory.
func TestMCPMatchesREST(t *testing.T) {
	dir := t.TempDir()
	p := start(t, []string{"HECTOR_DATA_DIR=" + dir})
	for _, user := range []string{"alice", "bob"} {
		u := "/v1/apps/demo/users/" + user
		for i := range 2 {
			id := fmt.Sprintf("%s-%d", user, i)
			p.call(t, "POST", u+"/sessions", map[string]any{"session_id": id}, 201)
			for j := range 5 {
				p.call(t, "POST", u+"/sessions/"+id+"/events", text(fmt.Sprintf("%s keeps bees, message %d of session %d", user, j, i)), 201)
			}
		}
		p.call(t, "POST", u+"/facts", map[string]any{"key": "pet", "value": user + "'s cat", "category": "home"}, 201)
	}
	want := rest(t, p)

	overHTTP, err := mcp.Remote(t.Context(), p.base, "", "demo", "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer overHTTP.Close()
	exercise(t, overHTTP, want)
	exercise(t, stdioClient(t, nil, "--server", p.base, "--app", "demo", "--user", "alice"), want)

	// Bad requests at /mcp: no identity, an oversized body.
	req, _ := http.NewRequest("POST", p.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Errorf("/mcp naming no user with auth off: %v %v", resp.Status, err)
	}

	// A turn recorded over MCP is what REST reads back, and found.
	res, err := overHTTP.CallTool(t.Context(), &sdk.CallToolParams{Name: "record_messages", Arguments: map[string]any{"session_id": "desktop",
		"messages": []map[string]any{{"role": "user", "content": "I moved to Braga"}, {"role": "assistant", "content": "Braga, noted."}}}})
	if err != nil || res.IsError {
		t.Fatalf("record_messages: %v %+v", err, res)
	}
	got := p.call(t, "GET", "/v1/apps/demo/users/alice/sessions/desktop", nil, 200)["events"].([]any)
	if len(got) != 2 || !strings.Contains(canonical(t, got[0]), "I moved to Braga") || !strings.Contains(canonical(t, got[1]), `"role":"assistant"`) {
		t.Errorf("the recorded turn over REST: %v", got)
	}
	found := p.call(t, "POST", "/v1/apps/demo/users/alice/memory:search", map[string]any{"query": "Braga"}, 200)["results"].([]any)
	if len(found) == 0 || found[0].(map[string]any)["session_id"] != "desktop" {
		t.Errorf("searching the recorded turn: %v", found)
	}
	p.call(t, "DELETE", "/v1/apps/demo/users/alice/sessions/desktop", nil, 204)

	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	exercise(t, stdioClient(t, nil, "--data-dir", dir, "--app", "demo", "--user", "alice"), want)
}

// A server with auth on asks for a credential, and hector mcp --server
// without one says where to put it.
func TestMCPStdioNeedsTheCredentialAServerAsksFor(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "auth.yaml")
	os.WriteFile(cfg, []byte("server:\n  auth:\n    api_keys:\n      - {name: ops, key_env: HECTOR_TEST_OPS_KEY, role: admin}\n"), 0o600)
	p := start(t, []string{"HECTOR_DATA_DIR=" + dir, "HECTOR_TEST_OPS_KEY=ops-key-0123456789"}, "--config", cfg)
	cmd := exec.Command(binary, "mcp", "--server", p.base, "--app", "demo", "--user", "alice")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, "HECTOR_API_KEY=") })
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs a credential") || !strings.Contains(string(out), "$HECTOR_API_KEY") {
		t.Errorf("hector mcp --server without a key, on a server with auth on: %v %s", err, out)
	}
}

// A client that writes its requests and closes its end at once (a script
// piping them in) gets every answer before hector mcp exits, in the order
// it asked: a search piped after a write finds what was written.
func TestStdioAnswersBeforeExiting(t *testing.T) {
	requests := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"record_messages","arguments":{"session_id":"hives","messages":[{"role":"user","content":"The blue hive swarmed in June"}]}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_memory","arguments":{"query":"swarmed"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
	}, "\n") + "\n"
	for run := range 3 {
		cmd := exec.Command(binary, "mcp", "--app", "demo", "--user", "alice", "--data-dir", t.TempDir())
		cmd.Env = append(os.Environ(), "HECTOR_FACTS_KEY=")
		cmd.Stdin = strings.NewReader(requests) // read to its end at once
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hector mcp: %v", err)
		}
		var order []float64
		results := map[float64]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var m struct {
				ID     float64         `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal([]byte(line), &m) == nil && m.Result != nil {
				order = append(order, m.ID)
				results[m.ID] = string(m.Result)
			}
		}
		if fmt.Sprint(order) != "[1 2 3 4]" {
			t.Errorf("run %d: answered %v, want requests 1 to 4 in order:\n%s", run, order, out)
		}
		if !strings.Contains(results[3], "The blue hive swarmed in June") {
			t.Errorf("run %d: the search piped after the write did not find it: %s", run, results[3])
		}
	}
}
