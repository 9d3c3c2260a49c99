// Package python holds the Python client (clients/python/hector, standard
// library only) and the test that runs its own tests, against a real
// `hector serve` built from this tree.
package python

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The Python tests pass: the client is in step with ../openapi.json
// (tests/test_openapi.py) and drives a real server (tests/test_client.py).
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: scripts/test installs it when it can")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "hector")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/hector").CombinedOutput(); err != nil {
		t.Fatalf("building hector: %v\n%s", err, out)
	}
	const admin, alice = "admin-key-0123456789", "alice-key-0123456789"
	config := filepath.Join(dir, "hector.yaml")
	os.WriteFile(config, []byte(fmt.Sprintf(`server:
  index: {type: keyword}
  limits: {requests_per_second: 100000, burst: 100000}
  auth:
    api_keys:
      - {name: admin, key: %s, role: admin}
      - {name: alice, key: %s, role: user, app: travel, user: alice}
`, admin, alice)), 0o600)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	serve := exec.Command(bin, "serve", "--config", config, "--address", addr)
	serve.Env = append(os.Environ(), "HECTOR_DATA_DIR="+filepath.Join(dir, "data"), "HECTOR_FACTS_KEY=")
	logs, _ := os.Create(filepath.Join(dir, "serve.log"))
	serve.Stdout, serve.Stderr = logs, logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	url := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			raw, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			t.Fatalf("hector serve did not become ready:\n%s", raw)
		}
	}
	// With the tools scripts/test installs, pytest runs them; without,
	// the standard library's unittest does.
	run := exec.Command(python, "-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v")
	if tools := os.Getenv(ToolsEnv); tools != "" {
		run = exec.Command(filepath.Join(tools, "pytest"), "-q", "-p", "no:cacheprovider", "tests")
	}
	run.Env = append(os.Environ(), "HECTOR_TEST_BIN="+bin, "HECTOR_TEST_URL="+url, "HECTOR_TEST_ADMIN_KEY="+admin, "HECTOR_TEST_ALICE_KEY="+alice, "PYTHONDONTWRITEBYTECODE=1")
	out, err := run.CombinedOutput()
	t.Logf("%s:\n%s", run.Args[0], out)
	if err != nil {
		t.Fatalf("the Python tests failed: %v", err)
	}
}

// ToolsEnv names the variable holding the bin directory of a Python
// environment with pytest, mypy, setuptools and wheel (scripts/test makes it).
const ToolsEnv = "HECTOR_TEST_PYTHON_TOOLS"

func pythonTools(t *testing.T) string {
	tools := os.Getenv(ToolsEnv)
	if tools == "" {
		t.Skip(ToolsEnv + " is not set: scripts/test installs pytest, mypy, setuptools and wheel from the Python package index")
	}
	return tools
}

// The client type-checks under mypy --strict.
func TestPythonClientTypes(t *testing.T) {
	tools := pythonTools(t)
	out, err := exec.Command(filepath.Join(tools, "mypy"), "--strict", "--cache-dir", filepath.Join(t.TempDir(), "mypy"), "hector").CombinedOutput()
	if err != nil {
		t.Fatalf("mypy --strict hector: %v\n%s", err, out)
	}
}

// pip install ./clients/python installs a client that imports and knows
// the server's operations; the checkout is left as it was.
func TestPythonClientInstalls(t *testing.T) {
	tools := pythonTools(t)
	src, target := filepath.Join(t.TempDir(), "src"), filepath.Join(t.TempDir(), "site")
	if err := os.CopyFS(src, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	// The environment's setuptools builds it: nothing is fetched.
	install := exec.Command(filepath.Join(tools, "pip"), "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-build-isolation", "--target", target, src)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}
	check := exec.Command(filepath.Join(tools, "python"), "-c", "import hector, importlib.metadata as m; c = hector.Client('http://127.0.0.1:1'); "+
		"print(c.search_memory.__name__, *sorted(m.metadata('hector-client').get_all('Provides-Extra')))")
	check.Env = append(os.Environ(), "PYTHONPATH="+target, "PYTHONDONTWRITEBYTECODE=1")
	check.Dir = t.TempDir() // not the source: the installed copy
	// The extras name the frameworks; the plain client needs none of them.
	if out, err := check.CombinedOutput(); err != nil || string(out) != "search_memory adk langgraph openai-agents\n" {
		t.Fatalf("the installed client: %v\n%s", err, out)
	}
}
