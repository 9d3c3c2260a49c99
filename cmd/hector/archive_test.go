package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	if out, err := hector(from, "user", "export", "--app", "demo", "--user", "ana", "--server", p.base, "-o", archive); err != nil ||
		!strings.Contains(out, "wrote "+archive+" (") || !strings.Contains(out, "): 1 sessions, 1 events, 1 fact versions, 1 artifact versions, 0 user: state keys") {
		t.Fatalf("export through the server: %v\n%s; want it to say what it wrote", err, out)
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

// An import killed (SIGKILL) part-way, at several points, is undone when
// the server starts again: /readyz names it until it is, and then the user
// holds nothing of the archive in any store, so importing it again
// succeeds, whole.
func TestAnImportKilledPartWayIsUndone(t *testing.T) {
	const sessions = 400
	dir := t.TempDir()
	config := filepath.Join(dir, "hector.yaml")
	os.WriteFile(config, []byte("server:\n  index: {type: keyword}\n  limits: {requests_per_second: 100000, burst: 100000}\n"), 0o600)
	env := []string{"HECTOR_DATA_DIR=" + dir, "HECTOR_FACTS_KEY="}
	p := start(t, env, "--config", config)
	src := "/v1/apps/demo/users/src"
	for i := range sessions {
		p.call(t, "POST", src+"/sessions", map[string]any{"session_id": fmt.Sprintf("s%d", i)}, 201)
		p.call(t, "POST", fmt.Sprintf("%s/sessions/s%d/events", src, i), text(fmt.Sprintf("turn %d of the archive", i)), 201)
		if i%50 == 0 {
			p.call(t, "PUT", fmt.Sprintf("%s/sessions/s%d/artifacts/notes.txt", src, i), "notes", 201)
		}
	}
	p.call(t, "PUT", src+"/sessions/s0/artifacts/user:profile.txt", "profile", 201)
	p.call(t, "POST", src+"/facts", map[string]any{"key": "hive", "value": "Keeps a blue hive"}, 201)
	p.call(t, "PATCH", src+"/state", map[string]any{"state": map[string]any{"user:home": "Porto"}}, 200)
	archive := exported(t, p, src)
	for _, point := range []int{1, sessions / 3, sessions * 3 / 4} {
		user := fmt.Sprintf("kill-at-%d", point)
		u := "/v1/apps/demo/users/" + user
		go func() { // the answer never comes: the server is killed
			http.Post(p.base+u+"/import", "application/x-tar", bytes.NewReader(archive))
		}()
		deadline := time.Now().Add(time.Minute)
		for n := 0; n < point; n = sessionsHeld(t, p, user) {
			if n == sessions || time.Now().After(deadline) {
				t.Fatalf("the import was not caught at %d sessions: it holds %d", point, n)
			}
		}
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()

		p = start(t, env, "--config", config)
		for ready := false; !ready; {
			if time.Now().After(deadline) {
				t.Fatalf("killed at %d sessions: /readyz did not come back", point)
			}
			r, err := http.Get(p.base + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if ready = r.StatusCode == 200; !ready && !strings.Contains(string(raw), "imports") {
				t.Fatalf("/readyz while the import is undone: %d %s; want it named", r.StatusCode, raw)
			}
		}
		if n := sessionsHeld(t, p, user); n != 0 {
			t.Errorf("killed at %d sessions: %d left once ready", point, n)
		}
		got := p.call(t, "POST", u+"/import", string(archive), 201)
		if got["sessions"] != float64(sessions) || got["fact_versions"] != float64(1) || got["user_state_keys"] != float64(1) ||
			got["artifact_versions"] != float64(sessions/50+1) {
			t.Errorf("killed at %d sessions, importing again: %v", point, got)
		}
		// The import that answered is kept: the undoing ends without
		// taking it for the one the kill cut short.
		for !strings.Contains(p.logs.String(), "no import a stop cut short is left to undo") {
			if time.Now().After(deadline) {
				t.Fatalf("killed at %d sessions: the undoing did not end", point)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n := sessionsHeld(t, p, user); n != sessions {
			t.Errorf("killed at %d sessions: %d sessions once the undoing ended, after an import that answered with %d", point, n, sessions)
		}
	}
}

// A user erased while an import into them runs ends erased, verified: the
// erasure waits for the import under way (new ones are refused), then
// removes all of it (finding 5 of issue 71: sessions were left behind an
// erasure that ended unverified). The archive arrives in two halves, the
// second once the erasure has begun, so the import is under way whatever
// the pace of either.
func TestAnErasureDuringAnImportEndsVerified(t *testing.T) {
	const sessions = 300
	dir := t.TempDir()
	config := filepath.Join(dir, "hector.yaml")
	os.WriteFile(config, []byte("server:\n  index: {type: keyword}\n  limits: {requests_per_second: 100000, burst: 100000}\n"), 0o600)
	p := start(t, []string{"HECTOR_DATA_DIR=" + dir, "HECTOR_FACTS_KEY="}, "--config", config)
	src := "/v1/apps/demo/users/src"
	for i := range sessions {
		p.call(t, "POST", src+"/sessions", map[string]any{"session_id": fmt.Sprintf("s%d", i)}, 201)
		p.call(t, "POST", fmt.Sprintf("%s/sessions/s%d/events", src, i), text(fmt.Sprintf("turn %d of the archive", i)), 201)
	}
	archive := exported(t, p, src)
	held := func() int { return sessionsHeld(t, p, "dst") }
	u := "/v1/apps/demo/users/dst"
	body, feed := io.Pipe()
	imported := make(chan int, 1)
	go func() {
		resp, err := http.Post(p.base+u+"/import", "application/x-tar", body)
		if err != nil {
			imported <- 0
			return
		}
		resp.Body.Close()
		imported <- resp.StatusCode
	}()
	go feed.Write(archive[:len(archive)/2])
	deadline := time.Now().Add(time.Minute)
	for held() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the import's first half wrote nothing")
		}
	}
	erased := make(chan map[string]any, 1)
	go func() {
		req, _ := http.NewRequest("DELETE", p.base+u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			erased <- nil
			return
		}
		defer resp.Body.Close()
		var receipt map[string]any
		json.NewDecoder(resp.Body).Decode(&receipt)
		receipt["http_status"] = resp.StatusCode
		erased <- receipt
	}()
	// The second half once the erasure has ended, or says it waits for
	// the import: an erasure that did not wait would leave it behind.
	var receipt map[string]any
	for receipt == nil && !strings.Contains(p.logs.String(), "waiting for the import into the user under way to end") {
		if time.Now().After(deadline) {
			t.Fatal("the erasure neither ended nor waited for the import")
		}
		select {
		case receipt = <-erased:
		case <-time.After(10 * time.Millisecond):
		}
	}
	feed.Write(archive[len(archive)/2:])
	feed.Close()
	if code := <-imported; code != 201 {
		t.Errorf("the import under way answered %d, want 201: it is waited for, not cut", code)
	}
	if receipt == nil {
		receipt = <-erased
	}
	if receipt["http_status"] != 200 || receipt["verified"] != true || receipt["state"] != "done" {
		t.Errorf("the erasure's receipt: %v; want done and verified", receipt)
	}
	if n := held(); n != 0 {
		t.Errorf("%d sessions left after the erasure", n)
	}
}

// exported is the archive GET …/export answers for the user at userPath.
func exported(t *testing.T, p *proc, userPath string) []byte {
	t.Helper()
	resp, err := http.Get(p.base + userPath + "/export")
	if err != nil {
		t.Fatal(err)
	}
	archive, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("export: %d, %v", resp.StatusCode, err)
	}
	return archive
}

// sessionsHeld is how many sessions a user of app demo holds, as the
// users' list says.
func sessionsHeld(t *testing.T, p *proc, user string) int {
	t.Helper()
	for _, u := range p.call(t, "GET", "/v1/apps/demo/users?page_size=1000", nil, 200)["users"].([]any) {
		if u := u.(map[string]any); u["user"] == user {
			n, _ := u["sessions"].(float64)
			return int(n)
		}
	}
	return 0
}
