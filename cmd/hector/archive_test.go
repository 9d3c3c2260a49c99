package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hector user export and import move a user: out of a running server or
// a stopped one's data directory, into another deployment, where the
// sessions read and search as they did; a second import is refused.
func TestUserExportAndImportCommands(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	config := filepath.Join(t.TempDir(), "hector.yaml")
	os.WriteFile(config, []byte("server:\n  index: {type: keyword}\n"), 0o600)
	hector := func(dir string, args ...string) (string, error) {
		cmd := exec.Command(binary, append(args, "--config", config)...)
		cmd.Env = append(os.Environ(), "HECTOR_DATA_DIR="+dir, "HECTOR_FACTS_KEY=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	p := start(t, []string{"HECTOR_DATA_DIR=" + from, "HECTOR_FACTS_KEY="}, "--config", config)
	u := "/v1/apps/demo/users/ana"
	p.call(t, "POST", u+"/sessions", map[string]any{"session_id": "hives"}, 201)
	p.call(t, "POST", u+"/sessions/hives/events", text("The blue hive swarmed in June"), 201)
	p.call(t, "POST", u+"/facts", map[string]any{"key": "hive", "value": "Keeps a blue hive"}, 201)
	p.call(t, "PUT", u+"/sessions/hives/artifacts/notes.txt", "swarm notes", 201)

	archive := filepath.Join(t.TempDir(), "ana.tar")
	if out, err := hector(from, "user", "export", "--app", "demo", "--user", "ana", "--server", p.base, "-o", archive); err != nil {
		t.Fatalf("export through the server: %v\n%s", err, out)
	}
	if out, err := hector(from, "user", "export", "--app", "demo", "--user", "ana", "-o", archive+"2"); err == nil || !strings.Contains(out, "--server "+p.base) {
		t.Errorf("export beside a running server: %v\n%s; want the data directory refused, pointing at --server", err, out)
	}
	if out, err := hector(from, "user", "export", "--app", "demo", "--user", "ana", "--server", p.base, "-o", archive); err == nil || !strings.Contains(out, "never written over") {
		t.Errorf("export over an existing file: %v\n%s", err, out)
	}
	p.stop(t)

	out, err := hector(to, "user", "import", "--app", "demo", "--user", "ana", archive)
	if err != nil || !strings.Contains(out, `"sessions": 1`) || !strings.Contains(out, `"artifact_versions": 1`) {
		t.Fatalf("import into a stopped deployment: %v\n%s", err, out)
	}
	q := start(t, []string{"HECTOR_DATA_DIR=" + to, "HECTOR_FACTS_KEY="}, "--config", config)
	got := q.call(t, "GET", u+"/sessions/hives", nil, 200)
	if events := got["events"].([]any); len(events) != 1 || !strings.Contains(fmt.Sprint(events[0]), "The blue hive swarmed") {
		t.Errorf("the moved session: %v", got)
	}
	if res := q.call(t, "POST", u+"/memory:search", map[string]any{"query": "swarmed"}, 200); len(res["results"].([]any)) != 1 {
		t.Errorf("searching the moved user: %v", res)
	}
	if out, err := hector(to, "user", "import", "--app", "demo", "--user", "ana", "--server", q.base, archive); err == nil || !strings.Contains(out, "409") {
		t.Errorf("importing again: %v\n%s; want the server's 409", err, out)
	}
}
