package main

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An erasure killed (SIGKILL) at several points is finished when the
// server starts again, and its receipt says so: every session and every
// artifact is gone, from the API and from the data directory, the counts
// add up, and the verification pass found nothing left. A session ID used
// again afterwards shows none of the old session's artifacts.
func TestErasureFinishesAfterACrash(t *testing.T) {
	const sessions = 300
	for _, point := range []struct {
		name string
		// reached says the erasure has got as far as the kill point.
		reached func(r erasureReceipt) bool
	}{
		{"as it starts", func(r erasureReceipt) bool { return r.State == "running" }},
		{"at the first session", func(r erasureReceipt) bool { return r.removed("sessions") > 0 }},
		{"half-way through the sessions", func(r erasureReceipt) bool { return r.removed("sessions") > sessions/2 }},
	} {
		t.Run(point.name, func(t *testing.T) {
			dir := t.TempDir()
			config := filepath.Join(dir, "hector.yaml")
			os.WriteFile(config, []byte("server:\n  index: {type: keyword}\n  limits: {requests_per_second: 100000, burst: 100000}\n"), 0o600)
			env := []string{"HECTOR_DATA_DIR=" + dir, "HECTOR_FACTS_KEY="}
			p := start(t, env, "--config", config)
			u := "/v1/apps/demo/users/big"
			for i := range sessions {
				p.call(t, "POST", u+"/sessions", map[string]any{"session_id": fmt.Sprintf("s%d", i)}, 201)
				p.call(t, "PUT", fmt.Sprintf("%s/sessions/s%d/artifacts/notes.txt", u, i), fmt.Sprintf("big's notes %d", i), 201)
			}
			p.call(t, "PUT", u+"/sessions/s0/artifacts/user:profile.txt", "big's profile", 201)
			p.call(t, "POST", u+"/sessions/s0/events", text("a message to erase"), 201)
			p.call(t, "POST", "/v1/apps/demo/users/other/sessions", map[string]any{"session_id": "kept"}, 201)

			go func() { // the answer never comes: the server is killed
				req, _ := http.NewRequest("DELETE", p.base+u, nil)
				http.DefaultClient.Do(req)
			}()
			deadline := time.Now().Add(30 * time.Second)
			for r := receipt(p, u); !point.reached(r); r = receipt(p, u) {
				if r.State == "done" || time.Now().After(deadline) {
					t.Fatalf("the erasure was not caught %s: %+v", point.name, r)
				}
				time.Sleep(time.Millisecond)
			}
			p.cmd.Process.Signal(syscall.SIGKILL)
			p.cmd.Wait()

			p = start(t, env, "--config", config)
			r := receipt(p, u)
			for deadline := time.Now().Add(time.Minute); r.State != "done" && time.Now().Before(deadline); r = receipt(p, u) {
				time.Sleep(10 * time.Millisecond) // finished in the background, after the start
			}
			if r.State != "done" || !r.Verified || r.Resumed != 1 {
				t.Fatalf("after the restart the receipt = %+v", r)
			}
			// A session deleted at the instant of the kill, before its count
			// was recorded, is counted all the same.
			if n := r.removed("sessions"); n != sessions {
				t.Errorf("sessions removed: %d, want %d (%+v)", n, sessions, r)
			}
			// Artifacts are counted once their store is done: a kill inside
			// it can leave what it had removed uncounted.
			if n := r.removed("artifacts"); n > sessions+1 || n == 0 && point.name != "as it starts" {
				t.Errorf("artifacts removed: %d, want %d (%+v)", n, sessions+1, r)
			}
			if got := p.call(t, "GET", u+"/sessions", nil, 200); len(got["sessions"].([]any)) != 0 {
				t.Errorf("sessions left: %v", got)
			}
			filepath.WalkDir(filepath.Join(dir, "artifacts"), func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					t.Errorf("left in the data directory: %s", strings.TrimPrefix(path, dir))
				}
				return err
			})
			// The receipt is recorded done an instant before this process
			// lets the user's writes through: a client that meets the hold
			// follows the receipt and tries again.
			for deadline := time.Now().Add(time.Minute); ; {
				resp, err := http.Post(p.base+u+"/sessions", "application/json", strings.NewReader(`{"session_id": "s0"}`))
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 201 {
					break
				}
				if resp.StatusCode != 409 || !strings.Contains(string(raw), "erasure_in_progress") || time.Now().After(deadline) {
					t.Fatalf("making session s0 again: %d %s", resp.StatusCode, raw)
				}
			}
			if got := p.call(t, "GET", u+"/sessions/s0/artifacts", nil, 200); fmt.Sprint(got["artifacts"]) != "[]" {
				t.Errorf("session s0 made again shows %v", got)
			}
			p.call(t, "GET", "/v1/apps/demo/users/other/sessions/kept", nil, 200)
		})
	}
}

type erasureReceipt struct {
	State    string
	Resumed  int
	Verified bool
	Stores   []struct {
		Store   string
		Removed int
		Left    int
	}
}

func (r erasureReceipt) removed(store string) int {
	for _, c := range r.Stores {
		if c.Store == store {
			return c.Removed
		}
	}
	return 0
}

func receipt(p *proc, u string) erasureReceipt {
	var r erasureReceipt
	resp, err := http.Get(p.base + u + "/erasure")
	if err != nil {
		return r
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&r)
	return r
}

// hector user erase erases a user, here with the server stopped and then
// through a running server, and prints the verified receipt.
func TestUserEraseCommand(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "hector.yaml")
	os.WriteFile(config, []byte("server:\n  index: {type: keyword}\n"), 0o600)
	env := []string{"HECTOR_DATA_DIR=" + dir, "HECTOR_FACTS_KEY="}
	p := start(t, env, "--config", config)
	for _, user := range []string{"alice", "bob"} {
		p.call(t, "POST", "/v1/apps/demo/users/"+user+"/sessions", map[string]any{"session_id": "s"}, 201)
		p.call(t, "POST", "/v1/apps/demo/users/"+user+"/facts", map[string]any{"key": "hobby", "value": user + " keeps bees"}, 201)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()

	run := func(args ...string) (string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("user", "erase", "--config", config, "--app", "demo", "--user", "alice"); err == nil || !strings.Contains(out, "add --yes") {
		t.Errorf("erasing from a script without --yes: %v\n%s; want it refused, naming --yes", err, out)
	}
	out, err := run("user", "erase", "--yes", "--config", config, "--app", "demo", "--user", "alice")
	if err != nil || !strings.Contains(out, `"verified": true`) || !strings.Contains(out, `"by": "cli"`) {
		t.Fatalf("erasing with the server stopped: %v\n%s", err, out)
	}
	if out, err := run("user", "erase", "--app", "demo"); err == nil || !strings.Contains(out, "--app A --user U") {
		t.Errorf("without --user: %v %s", err, out)
	}
	p = start(t, env, "--config", config)
	if got := p.call(t, "GET", "/v1/apps/demo/users/alice/facts", nil, 200); len(got["facts"].([]any)) != 0 {
		t.Errorf("alice's facts after the erasure: %v", got)
	}
	out, err = run("user", "erase", "-y", "--server", p.base, "--app", "demo", "--user", "bob")
	if err != nil || !strings.Contains(out, `"verified": true`) {
		t.Fatalf("erasing through the server: %v\n%s", err, out)
	}
	if got := p.call(t, "GET", "/v1/apps/demo/users/bob/sessions", nil, 200); len(got["sessions"].([]any)) != 0 {
		t.Errorf("bob's sessions after the erasure: %v", got)
	}
}

// A refused erasure records nothing, so the server starts again after it
// (it once left a receipt running that failed every start).
func TestARefusedErasureDoesNotStopTheNextStart(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "hector.yaml")
	os.WriteFile(config, []byte("server:\n  index: {type: keyword}\n"), 0o600)
	env := []string{"HECTOR_DATA_DIR=" + dir, "HECTOR_FACTS_KEY="}
	p := start(t, env, "--config", config)
	for _, user := range []string{"a%0Ab", strings.Repeat("u", 200)} {
		p.call(t, "DELETE", "/v1/apps/a1/users/"+user, nil, 400)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	cmd := exec.Command(binary, "user", "erase", "--yes", "--config", config, "--app", "a1", "--user", "a\nb")
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "control character") {
		t.Errorf("hector user erase of a user ID with a newline: %v %s", err, out)
	}
	p = start(t, env, "--config", config)
	p.call(t, "GET", "/readyz", nil, 200)
}
