package agent

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/tool"
)

// mcpCounter connects to a fresh internal/mcpcounter process, a real MCP
// server over stdio whose tools count the calls that reach them.
func mcpCounter(t *testing.T) map[string]tool.Tool {
	t.Helper()
	counterPath := filepath.Join(t.TempDir(), "mcpcounter")
	if out, err := exec.Command("go", "build", "-o", counterPath, "github.com/hectormem/hector/internal/mcpcounter").CombinedOutput(); err != nil {
		t.Fatalf("building internal/mcpcounter: %v\n%s", err, out)
	}
	tools, closeFn, err := ConnectMCP(t.Context(), MCPServer{Name: "counter", Command: []string{counterPath}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFn() })
	byName := map[string]tool.Tool{}
	for _, tl := range tools {
		byName[tl.Name()] = tl
	}
	return byName
}

// calls is what a counter tool said about the calls that reached it.
func calls(t *testing.T, out any, err error) float64 {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(out)
	var v struct{ Calls float64 }
	json.Unmarshal(raw, &v)
	return v.Calls
}

func TestToolCache(t *testing.T) {
	tools := mcpCounter(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cache := NewToolCache(func() time.Time { return now })
	if _, err := cache.CacheTool(tools["lookup"], 0); err == nil {
		t.Error("a cache without a TTL was accepted")
	}
	lookup, err := cache.CacheTool(tools["lookup"], 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	inv := tool.Invocation{AppName: "app", UserID: "alice"}
	call := func(inv tool.Invocation, args string) float64 {
		out, err := lookup.Call(t.Context(), inv, json.RawMessage(args))
		return calls(t, out, err)
	}
	if n := call(inv, `{"q":"tides"}`); n != 1 {
		t.Fatalf("first call reached the server as call %v", n)
	}
	if n := call(inv, `{ "q" : "tides" }`); n != 1 {
		t.Errorf("the same arguments again reached the server (call %v): want a hit", n)
	}
	if n := call(tool.Invocation{AppName: "app", UserID: "bob"}, `{"q":"tides"}`); n != 1 {
		t.Errorf("another user of the app: call %v, want the app's cached result", n)
	}
	if n := call(tool.Invocation{AppName: "other", UserID: "alice"}, `{"q":"tides"}`); n != 2 {
		t.Errorf("another app: call %v, want a miss", n)
	}
	if n := call(inv, `{"q":"moon"}`); n != 3 {
		t.Errorf("other arguments: call %v, want a miss", n)
	}
	now = now.Add(5 * time.Minute)
	if n := call(inv, `{"q":"tides"}`); n != 4 {
		t.Errorf("after the TTL: call %v, want a miss", n)
	}

	leak, _ := cache.CacheTool(tools["leak"], time.Hour)
	first, _ := leak.Call(t.Context(), inv, json.RawMessage(`{}`))
	second, _ := leak.Call(t.Context(), inv, json.RawMessage(`{}`))
	if a, b := first.(map[string]any)["answer"], second.(map[string]any)["answer"]; a == b {
		t.Errorf("a credential-shaped result was cached: %v", a)
	}
	fail, _ := cache.CacheTool(tools["fail"], time.Hour)
	_, err1 := fail.Call(t.Context(), inv, json.RawMessage(`{}`))
	_, err2 := fail.Call(t.Context(), inv, json.RawMessage(`{}`))
	if err1 == nil || err2 == nil || err1.Error() == err2.Error() {
		t.Errorf("errors %v and %v: want two calls, errors never cached", err1, err2)
	}
}

// A turn whose tool call was answered from the cache says so.
func TestToolCacheHitsInTurnMetadata(t *testing.T) {
	tools := mcpCounter(t)
	lookup, _ := NewToolCache(nil).CacheTool(tools["lookup"], time.Minute)
	ask := fakellm.Reply{Calls: [][3]string{{"c1", "lookup", `{"q":"tides"}`}}}
	f := setup(t, Config{Name: "assistant", App: "app", Tools: []tool.Tool{lookup}}, ask, fakellm.Reply{Content: "first"}, ask, fakellm.Reply{Content: "second"})
	first, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s1", Message: "tides?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.runner.Run(t.Context(), Request{UserID: "u", SessionID: "s2", Message: "tides?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.Metadata["tool_cache_hits"] != nil || second.Metadata["tool_cache_hits"] != 1 {
		t.Errorf("metadata: first %v, second %v", first.Metadata, second.Metadata)
	}
	if got := f.model.Request(3); !strings.Contains(strings.Join(strings.Fields(toJSON(got)), ""), `\"calls\":1`) {
		t.Errorf("the model got %s, want the cached result", toJSON(got))
	}
}

func toJSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// Erasing a user drops the entries their calls made or read, which may
// hold what they said in their arguments, and no other.
func TestToolCacheForgetsAUser(t *testing.T) {
	tools := mcpCounter(t)
	cache := NewToolCache(nil)
	lookup, err := cache.CacheTool(tools["lookup"], time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := func(user, args string) float64 {
		out, err := lookup.Call(t.Context(), tool.Invocation{AppName: "app", UserID: user}, json.RawMessage(args))
		return calls(t, out, err)
	}
	call("alice", `{"q":"my address is 12 Elm Street"}`) // made by alice
	call("bob", `{"q":"my address is 12 Elm Street"}`)   // read by bob
	carol := call("carol", `{"q":"weather"}`)
	if n := cache.ForgetUser("app", "bob"); n != 1 {
		t.Errorf("forgetting bob dropped %d entries, want the one he read", n)
	}
	if n := cache.ForgetUser("app", "bob"); n != 0 {
		t.Errorf("forgetting bob again dropped %d", n)
	}
	if got := call("carol", `{"q":"weather"}`); got != carol {
		t.Errorf("carol's entry was dropped: the tool ran again (%v calls, was %v)", got, carol)
	}
	before := call("alice", `{"q":"weather"}`)
	if after := call("alice", `{"q":"my address is 12 Elm Street"}`); after <= before {
		t.Errorf("the entry bob read is still served: %v calls, was %v", after, before)
	}
}
