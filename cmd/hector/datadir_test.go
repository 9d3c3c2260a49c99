package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// entries lists what is in dir, one level deep ("index/hybrid.db").
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	top, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		out = append(out, e.Name())
		if e.IsDir() {
			sub, _ := os.ReadDir(filepath.Join(dir, e.Name()))
			for _, s := range sub {
				out = append(out, e.Name()+"/"+s.Name())
			}
		}
	}
	return out
}

// useEverything writes a session, an event, an artifact and a fact, and
// finds the event by search.
func useEverything(t *testing.T, p *proc) {
	t.Helper()
	u := "/v1/apps/a/users/u"
	p.call(t, "POST", u+"/sessions", map[string]any{"session_id": "s"}, 201)
	p.call(t, "POST", u+"/sessions/s/events", text("the zeppelin lands at noon"), 201)
	p.call(t, "PUT", u+"/sessions/s/artifacts/plan.txt", "day 1", 201)
	p.call(t, "POST", u+"/facts", map[string]any{"key": "airship", "value": "zeppelin"}, 201)
	if res := p.call(t, "POST", u+"/memory:search", map[string]any{"query": "zeppelin"}, 200); len(res["results"].([]any)) != 1 {
		t.Errorf("search = %v", res)
	}
}

// stop ends a server the way an operator does, so it saves its index.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("server exit: %v", err)
	}
}

// With no configuration file, --data-dir and $HECTOR_DATA_DIR put
// everything Hector writes under the data directory and nothing in the
// working directory, for serve and for index rebuild alike.
func TestDataDirHoldsEverything(t *testing.T) {
	for _, how := range []string{"flag", "env"} {
		t.Run(how, func(t *testing.T) {
			cwd, data := t.TempDir(), filepath.Join(t.TempDir(), "store")
			env, args := []string{"HECTOR_FACTS_KEY=", "HECTOR_DATA_DIR="}, []string{"--data-dir", data}
			if how == "env" {
				env, args = []string{"HECTOR_FACTS_KEY=", "HECTOR_DATA_DIR=" + data}, nil
			}
			p := startIn(t, cwd, env, args...)
			useEverything(t, p)
			p.stop(t)
			for _, want := range []string{"data directory: " + data, "sessions:       sqlite " + filepath.Join(data, "hector.db"),
				"artifacts:      " + filepath.Join(data, "artifacts"), "facts key:      " + filepath.Join(data, "facts.key"),
				"kept in " + filepath.Join(data, "index", "hybrid.db"), "agents:         none (an agents: section of the configuration hosts some)"} {
				if !strings.Contains(p.banner, want) {
					t.Errorf("start-up lines lack %q:\n%s", want, p.banner)
				}
			}

			rebuild := exec.Command(binary, append([]string{"index", "rebuild", "--all"}, args...)...)
			rebuild.Dir, rebuild.Env = cwd, append(os.Environ(), env...)
			if out, err := rebuild.CombinedOutput(); err != nil || !strings.Contains(string(out), "1 documents indexed") || !strings.Contains(string(out), filepath.Join(data, "hector.db")) {
				t.Errorf("index rebuild on the data dir: %v\n%s", err, out)
			}

			if got := entries(t, cwd); len(got) != 0 {
				t.Errorf("the working directory holds %v, want nothing", got)
			}
			got := entries(t, data)
			for _, want := range []string{"hector.db", "hector.lock", "facts.key", "index/hybrid.db", "artifacts"} {
				if !slices.Contains(got, want) {
					t.Errorf("the data directory lacks %s: %v", want, got)
				}
			}
			t.Logf("data directory: %v", got)
		})
	}
}

// Two servers started from one working directory with different data
// directories have a database each: neither sees the other's writes, and
// each has its own facts key.
func TestTwoDataDirsTwoDatabases(t *testing.T) {
	cwd, one, two := t.TempDir(), t.TempDir(), t.TempDir()
	env := []string{"HECTOR_FACTS_KEY=", "HECTOR_DATA_DIR="}
	a := startIn(t, cwd, env, "--data-dir", one)
	useEverything(t, a)
	b := startIn(t, cwd, env, "--data-dir", two)
	u := "/v1/apps/a/users/u"
	b.call(t, "GET", u+"/sessions/s", nil, 404)
	if res := b.call(t, "POST", u+"/memory:search", map[string]any{"query": "zeppelin"}, 200); len(res["results"].([]any)) != 0 {
		t.Errorf("the second server finds the first's event: %v", res)
	}
	b.call(t, "GET", u+"/facts/airship", nil, 404)
	useEverything(t, b) // the same IDs, in its own database
	for _, dir := range []string{one, two} {
		if _, err := os.Stat(filepath.Join(dir, "hector.db")); err != nil {
			t.Errorf("%s has no database of its own: %v", dir, err)
		}
	}
	keyOne, _ := os.ReadFile(filepath.Join(one, "facts.key"))
	keyTwo, _ := os.ReadFile(filepath.Join(two, "facts.key"))
	if len(keyOne) == 0 || string(keyOne) == string(keyTwo) {
		t.Error("the two data directories do not have a facts key each")
	}
	if got := entries(t, cwd); len(got) != 0 {
		t.Errorf("the working directory holds %v", got)
	}
}

// With a configuration file, what the file leaves to the data directory
// (paths it omits, or writes under ${HECTOR_DATA_DIR}) follows --data-dir;
// an explicit absolute path stays where the file says, and the start-up
// lines show both.
func TestConfigFilePathsAndDataDir(t *testing.T) {
	cwd, data, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	env := []string{"HECTOR_FACTS_KEY=", "HECTOR_DATA_DIR="}
	shipped, _ := filepath.Abs("../../configs/default.yaml")
	p := startIn(t, cwd, env, "--config", shipped, "--data-dir", data)
	useEverything(t, p)
	p.stop(t)
	if got := entries(t, cwd); len(got) != 0 {
		t.Errorf("configs/default.yaml with --data-dir wrote %v in the working directory", got)
	}
	if !strings.Contains(p.banner, "sqlite "+filepath.Join(data, "hector.db")) {
		t.Errorf("start-up lines:\n%s", p.banner)
	}

	explicit := filepath.Join(t.TempDir(), "hector.yaml")
	db, arts := filepath.Join(elsewhere, "explicit.db"), filepath.Join(elsewhere, "files")
	os.WriteFile(explicit, []byte(fmt.Sprintf(`
server:
  data_dir: /nonexistent/overridden
  artifacts: {backend: filesystem, dir: %s}
databases:
  main: {driver: sqlite, dsn: %s}
`, arts, db)), 0o600)
	p = startIn(t, cwd, env, "--config", explicit, "--data-dir", data)
	useEverything(t, p)
	p.stop(t)
	for _, want := range []string{"data directory: " + data, "sqlite " + db, "artifacts:      " + arts, "facts key:      " + filepath.Join(data, "facts.key")} {
		if !strings.Contains(p.banner, want) {
			t.Errorf("start-up lines lack %q:\n%s", want, p.banner)
		}
	}
	if got := entries(t, elsewhere); !slices.Contains(got, "explicit.db") || !slices.Contains(got, "files") {
		t.Errorf("the file's explicit paths hold %v", got)
	}
	if got := entries(t, cwd); len(got) != 0 {
		t.Errorf("the working directory holds %v", got)
	}
}
