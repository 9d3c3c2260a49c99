package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// The end-to-end tests build the real binary and drive it over HTTP.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hector-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "hector")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(fmt.Sprintf("building hector: %v\n%s", err, out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freeAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer collects a child's log; the child writes while tests read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type proc struct {
	cmd    *exec.Cmd
	base   string
	banner string // what serve printed up to and including its URL
	logs   *syncBuffer
}

// start runs `hector serve` and waits until it says where it serves.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startIn(t, "", env, args...)
}

// startIn is start in the working directory wd.
func startIn(t *testing.T, wd string, env []string, args ...string) *proc {
	t.Helper()
	addr := freeAddress(t)
	cmd := exec.Command(binary, append([]string{"serve", "--address", addr}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = wd
	out, _ := cmd.StdoutPipe()
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	lines := bufio.NewScanner(out)
	var banner strings.Builder
	for lines.Scan() {
		banner.WriteString(lines.Text() + "\n")
		if strings.HasPrefix(lines.Text(), "Hector is serving at ") {
			break
		}
	}
	if !strings.Contains(banner.String(), "Hector is serving at http://"+addr+"\n") {
		t.Fatalf("serve printed %q", banner.String())
	}
	go io.Copy(io.Discard, out)
	return &proc{cmd: cmd, base: "http://" + addr, banner: banner.String(), logs: &logs}
}

func (p *proc) call(t *testing.T, method, path string, body any, want int) map[string]any {
	t.Helper()
	var r io.Reader
	if s, ok := body.(string); ok {
		r = strings.NewReader(s)
	} else if body != nil {
		raw, _ := json.Marshal(body)
		r = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, p.base+path, r)
	if body != nil && method != "PUT" { // a PUT's body is an artifact's content
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, want)
	}
	var out map[string]any
	json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return out
}

func text(s string) map[string]any {
	return map[string]any{"author": "user", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": s}}}}
}

// flow writes through every kind of route, kills the server with SIGKILL,
// restarts it on the same data and finds every acknowledged write.
func flow(t *testing.T, env []string, args ...string) {
	p := start(t, env, args...)
	u := "/v1/apps/demo/users/alice"
	p.call(t, "POST", u+"/sessions", map[string]any{"session_id": "s1", "state": map[string]any{"topic": "travel"}}, 201)
	p.call(t, "POST", u+"/sessions/s1/events", text("I am planning a trip to Lisbon in May"), 201)
	ev := text("My budget is 4000 euros")
	ev["actions"] = map[string]any{"state_delta": map[string]any{"user:budget": 4000, "app:season": "spring"}}
	p.call(t, "POST", u+"/sessions/s1/events", ev, 201)
	p.call(t, "POST", u+"/sessions/s1/events", map[string]any{"author": "user", "expected_seq": 1}, 409)
	p.call(t, "PUT", u+"/sessions/s1/artifacts/plan.txt", "day 1: Alfama", 201)
	p.call(t, "PUT", u+"/sessions/s1/artifacts/plan.txt", "day 1: Alfama\nday 2: Belém", 201)
	state := p.call(t, "GET", u+"/state", nil, 200)
	if fmt.Sprint(state["state"]) != "map[user:budget:4000]" {
		t.Errorf("user state = %v", state)
	}
	// Found by its words at once, by its meaning once the background vectors are written.
	waitFor(t, "the vectors", func() bool { return metric(t, p, "hector_index_vector_lag_changes") == "0" })
	found := p.call(t, "POST", u+"/memory:search", map[string]any{"query": "Lisbon trip"}, 200)
	ctx := p.call(t, "POST", u+"/sessions/s1/context", map[string]any{"working_memory": map[string]any{"type": "buffer_window", "max_messages": 1}}, 200)
	if evs := ctx["events"].([]any); len(evs) != 1 || !strings.Contains(fmt.Sprint(evs[0]), "4000 euros") {
		t.Errorf("trimmed context = %v", ctx)
	}

	p.cmd.Process.Signal(syscall.SIGKILL) // no chance to save anything
	p.cmd.Wait()
	p = start(t, env, args...)
	got := p.call(t, "GET", u+"/sessions/s1", nil, 200)
	if got["last_seq"] != 2.0 || len(got["events"].([]any)) != 2 || got["state"].(map[string]any)["topic"] != "travel" {
		t.Errorf("after SIGKILL and restart: %v", got)
	}
	if app := p.call(t, "GET", "/v1/apps/demo/state", nil, 200); fmt.Sprint(app["state"]) != "map[app:season:spring]" {
		t.Errorf("app state after restart = %v", app)
	}
	if a := p.call(t, "GET", u+"/sessions/s1/artifacts/plan.txt?version=1", nil, 200); a["raw"] != "day 1: Alfama" {
		t.Errorf("artifact version 1 after restart = %v", a)
	}
	if list := p.call(t, "GET", u+"/sessions/s1/artifacts", nil, 200); !strings.Contains(fmt.Sprint(list), "version:2") {
		t.Errorf("artifact list after restart = %v", list)
	}
	waitFor(t, "the vectors after the restart", func() bool { return metric(t, p, "hector_index_vector_lag_changes") == "0" })
	if again := p.call(t, "POST", u+"/memory:search", map[string]any{"query": "Lisbon trip"}, 200); fmt.Sprint(again) != fmt.Sprint(found) {
		t.Errorf("search after restart = %v, before = %v", again, found)
	}
	p.call(t, "DELETE", u+"/sessions/s1", nil, 204)
	if res := p.call(t, "POST", u+"/memory:search", map[string]any{"query": "Lisbon trip"}, 200); len(res["results"].([]any)) != 0 {
		t.Errorf("the deleted session is still found: %v", res)
	}
	p.call(t, "GET", u+"/sessions/s1/artifacts/plan.txt", nil, 404)
	p.call(t, "GET", "/healthz", nil, 200)
	p.call(t, "GET", "/readyz", nil, 200)
}

func TestServeSQLite(t *testing.T) {
	dir := t.TempDir()
	flow(t, []string{"HECTOR_DATA_DIR=" + dir, "HECTOR_FACTS_KEY="})
	// Zero config made a facts key, readable by its owner only.
	if fi, err := os.Stat(filepath.Join(dir, "facts.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("facts key file: %v %v", fi, err)
	}
}

func TestServePostgres(t *testing.T) {
	sqldbtest.Postgres(t) // skips without a server
	dsn := os.Getenv(sqldbtest.PostgresEnv)
	schema := fmt.Sprintf("e2e_%d", time.Now().UnixNano())
	db := sqldbtest.Postgres(t)
	db.Exec("CREATE SCHEMA " + schema)
	t.Cleanup(func() { db.Exec("DROP SCHEMA " + schema + " CASCADE") })
	cfg := filepath.Join(t.TempDir(), "hector.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
server:
  data_dir: %s
  sessions: {backend: sql, database: pg}
  artifacts: {backend: sql}
databases:
  pg: {driver: postgres, dsn: "%s search_path=%s"}
`, t.TempDir(), dsn, schema)), 0o600)
	flow(t, replicaEnv, "--config", cfg)
}

func TestServeMySQL(t *testing.T) {
	dsn := sqldbtest.MySQLDSN(t) // skips without a server
	cfg := filepath.Join(t.TempDir(), "hector.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
server:
  data_dir: %s
  sessions: {backend: sql, database: my}
  artifacts: {backend: sql}
databases:
  my: {driver: mysql, dsn: %q}
`, t.TempDir(), dsn)), 0o600)
	flow(t, replicaEnv, "--config", cfg)
}

// A refused start leaves nothing behind: no data directory, no facts key.
func TestServeRefusesAnOpenAddressWithoutAuth(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(binary, "serve", "--address", "0.0.0.0:"+strings.Split(freeAddress(t), ":")[1])
	cmd.Env = append(os.Environ(), "HECTOR_DATA_DIR="+data)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to serve on 0.0.0.0") || !strings.Contains(string(out), "server.auth") {
		t.Errorf("serve on 0.0.0.0 without auth: %v %s", err, out)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("the refused start left %s behind (%v)", data, err)
	}
}

func TestConfigValidate(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("agents:\n  bot:\n    llm: nope\n"), 0o600)
	out, err := exec.Command(binary, "config", "validate", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bad.yaml:3: agents.bot.llm") {
		t.Errorf("validate of a bad file: %v %s", err, out)
	}
	out, err = exec.Command(binary, "config", "validate", "../../configs/default.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") {
		t.Errorf("validate of the default config: %v %s", err, out)
	}
	// A file checked away from where it runs lacks its secrets: it is valid,
	// and the check says which variables it needs.
	secrets := filepath.Join(t.TempDir(), "secrets.yaml")
	os.WriteFile(secrets, []byte("llms:\n  m: {base_url: http://llm, model: x, api_key_env: HECTOR_TEST_UNSET_LLM_KEY}\n"+
		"server:\n  auth:\n    api_keys: [{key: \"${HECTOR_TEST_UNSET_ADMIN_KEY}\", role: admin}]\n"), 0o600)
	out, err = exec.Command(binary, "config", "validate", secrets).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") || !strings.Contains(string(out), "HECTOR_TEST_UNSET_LLM_KEY") ||
		!strings.Contains(string(out), "secrets.yaml:5: server.auth.api_keys.0.key: environment variable HECTOR_TEST_UNSET_ADMIN_KEY") {
		t.Errorf("validate of a file whose secrets are not set: %v %s", err, out)
	}
	// Every mistake at once, with the secrets it needs.
	os.WriteFile(bad, []byte("agents:\n  bot:\n    llm: nope\n    max_steps: -1\nserver:\n  index: {type: fuzzy}\n"+
		"  auth: {jwt: {hs256_secret_env: HECTOR_TEST_UNSET_JWT}}\n"), 0o600)
	out, err = exec.Command(binary, "config", "validate", bad).CombinedOutput()
	for _, want := range []string{"bad.yaml:3: agents.bot.llm", "bad.yaml:4: agents.bot.max_steps", "bad.yaml:6: server.index.type", "HECTOR_TEST_UNSET_JWT"} {
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("validate of a file with several mistakes: %v, output lacks %q:\n%s", err, want, out)
		}
	}
}

func TestIndexRebuildRefusesWhileServing(t *testing.T) {
	dir := t.TempDir()
	p := start(t, []string{"HECTOR_DATA_DIR=" + dir})
	p.call(t, "POST", "/v1/apps/a/users/u/sessions", map[string]any{"session_id": "s"}, 201)
	p.call(t, "POST", "/v1/apps/a/users/u/sessions/s/events", text("remember the zeppelin"), 201)
	cmd := exec.Command(binary, "index", "rebuild", "--all")
	cmd.Env = append(os.Environ(), "HECTOR_DATA_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "run `hector index rebuild --all --server "+p.base+"`") {
		t.Errorf("rebuild beside a running server: %v %s; want the command typed, --server added", err, out)
	}
	out, err = exec.Command(binary, "index", "rebuild", "--all", "--server", p.base).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rebuilt by the server") {
		t.Errorf("rebuild through the server: %v %s", err, out)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	cmd = exec.Command(binary, "index", "rebuild", "--app", "a")
	cmd.Env = append(os.Environ(), "HECTOR_DATA_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "1 documents indexed") {
		t.Errorf("rebuild with the server stopped: %v %s", err, out)
	}
	// A mistyped data directory has no sessions: refused, and nothing made there.
	typo := filepath.Join(t.TempDir(), "dtaa")
	out, err = exec.Command(binary, "index", "rebuild", "--all", "--data-dir", typo).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no sessions to rebuild from") || !strings.Contains(string(out), "--data-dir") {
		t.Errorf("rebuild of a data directory that does not exist: %v %s", err, out)
	}
	if _, err := os.Stat(typo); err == nil {
		t.Errorf("the refused rebuild made %s", typo)
	}
}

// TestReadmeWalkthrough runs README.md's curl walk-through, as printed,
// against the real server.
func TestReadmeWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- walkthrough -->\n```sh\n")
	script, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no walkthrough block (```sh after <!-- walkthrough -->)")
	}
	p := start(t, []string{"HECTOR_DATA_DIR=" + t.TempDir()})
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "H="+p.base)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{`"user:name":"Alice"`, `"seq":2`, `"user:budget":4000`, "Day 1: Alfama", `"content":"I am planning a trip to Lisbon in May"`, `"strategy":"buffer_window"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output lacks %s:\n%s", want, out)
		}
	}
}

// TestGracefulShutdown sends SIGTERM while an upload is in flight: the
// upload completes, the server exits cleanly and saves its index.
func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	p := start(t, []string{"HECTOR_DATA_DIR=" + dir})
	u := "/v1/apps/a/users/u/sessions"
	p.call(t, "POST", u, map[string]any{"session_id": "s"}, 201)
	p.call(t, "POST", u+"/s/events", text("remember the zeppelin"), 201)

	body, w := io.Pipe()
	done := make(chan int)
	go func() {
		req, _ := http.NewRequest("PUT", p.base+u+"/s/artifacts/slow.bin", body)
		// A connection of its own: shutting down closes idle keep-alive
		// connections, and a request just sent on one can meet that close.
		fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := fresh.Do(req)
		if err != nil {
			t.Log("upload:", err)
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	// A first write larger than any socket buffer returns only once the
	// handler is reading the body: the request is then surely in flight.
	w.Write(bytes.Repeat([]byte("x"), 16<<20))
	p.cmd.Process.Signal(syscall.SIGTERM)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for range 4 {
		w.Write(chunk)
	}
	w.Close()
	if code := <-done; code != 201 {
		t.Errorf("the upload in flight at SIGTERM ended with %d, want 201", code)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("server exit after SIGTERM: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "index", "hybrid.db")); err != nil || fi.Size() == 0 {
		t.Errorf("no index file kept: %v", err)
	}
	p = start(t, []string{"HECTOR_DATA_DIR=" + dir})
	if a := p.call(t, "GET", u+"/s/artifacts/slow.bin", nil, 200); len(a["raw"].(string)) != 16<<20+4*64<<10 {
		t.Errorf("the upload finished during shutdown holds %d bytes", len(a["raw"].(string)))
	}
}

// An index store that takes connections and never answers does not hold
// up start-up: the server serves at once (before, it waited 30 s for the
// store), says the index is unavailable, and asks the store again on
// every call.
func TestServeStartsBesideAStoreThatDoesNotAnswer(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	port := silent.Addr().(*net.TCPAddr).Port
	cfg := filepath.Join(t.TempDir(), "qdrant.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("server:\n  index: {type: keyword, store: qdrant, qdrant: {host: 127.0.0.1, port: %d}}\n", port)), 0o600)
	began := time.Now()
	p := start(t, []string{"HECTOR_DATA_DIR=" + t.TempDir()}, "--config", cfg)
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("start-up took %s beside a store that does not answer", took)
	}
	p.call(t, "GET", "/healthz", nil, 200)
	// The probe names the index, and only the index: the database, asked
	// at the same time, answers.
	if got := fmt.Sprint(p.call(t, "GET", "/readyz", nil, 503)["unavailable"]); got != "[index]" {
		t.Errorf("/readyz names %s as unavailable, want the index alone", got)
	}
}
