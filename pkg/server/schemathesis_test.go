package server_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hectormem/hector/pkg/server/servertest"
)

// The OpenAPI document holds against a real server under schemathesis
// (installed by scripts/python-tools.sh): every operation, with inputs the
// schema allows and inputs it does not; no 5xx, every response as
// documented (status, content type, body), bad input refused, good input
// taken (except where testdata/schemathesis.toml says why not), auth
// enforced. The seed is fixed so that a run is repeatable;
// HECTOR_TEST_SCHEMATHESIS_SEED tries another.
func TestOpenAPIFuzzedBySchemathesis(t *testing.T) {
	tools := os.Getenv("HECTOR_TEST_PYTHON_TOOLS")
	bin := filepath.Join(tools, "schemathesis")
	if _, err := os.Stat(bin); tools == "" || err != nil {
		t.Skip("schemathesis is not installed: scripts/test installs it with the Python tools (scripts/python-tools.sh)")
	}
	config, err := filepath.Abs("testdata/schemathesis.toml")
	if err != nil {
		t.Fatal(err)
	}
	const admin = "admin-key-0123456789"
	hs := servertest.Start(t, fmt.Sprintf(`
server:
  data_dir: %s
  index: {type: keyword}
  limits: {requests_per_second: 100000}
  auth:
    api_keys:
      - {name: admin, key: %s, role: admin}
`, t.TempDir(), admin))
	seed := os.Getenv("HECTOR_TEST_SCHEMATHESIS_SEED")
	if seed == "" {
		seed = "1"
	}
	run := exec.CommandContext(t.Context(), bin, "--config-file", config, "run", hs.URL+"/openapi.json",
		"--header", "Authorization: Bearer "+admin, "--workers", "1", "--max-examples", "25",
		"--seed", seed, "--no-color")
	run.Dir = t.TempDir() // where it keeps its cache
	run.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("schemathesis found problems (%v):\n%s", err, out)
	}
	t.Logf("%s", out)
}
