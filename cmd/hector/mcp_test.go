package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
	if err == nil || !strings.Contains(string(out), "hector mcp --server "+p.base) {
		t.Errorf("hector mcp beside a running server: %v %s", err, out)
	}
	remote := stdioClient(t, []string{"HECTOR_API_KEY=local"}, "--server", p.base, "--app", "demo", "--user", "alice")
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
	if out := run(append([]string{p.base + "/mcp", "--method", "tools/list"}, who...)...); !strings.Contains(out, `"search_memory"`) || !strings.Contains(out, `"memory_store"`) {
		t.Errorf("tools/list over HTTP:\n%s", out)
	}
	if out := run(append([]string{p.base + "/mcp", "--method", "tools/call", "--tool-name", "search_memory", "--tool-arg", "query=Lisbon"}, who...)...); !strings.Contains(out, "Plan a trip to Lisbon in May") {
		t.Errorf("search_memory over HTTP:\n%s", out)
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
