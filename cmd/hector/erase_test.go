package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// An erasure killed half-way (SIGKILL) is finished when the server starts
// again, and its receipt says so: every session is gone, the count adds
// up, and the verification pass found nothing left.
func TestErasureFinishesAfterACrash(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "hector.yaml")
	os.WriteFile(config, []byte("server:\n  index: {type: keyword}\n  limits: {requests_per_second: 100000, burst: 100000}\n"), 0o600)
	env := []string{"HECTOR_DATA_DIR=" + dir, "HECTOR_FACTS_KEY="}
	p := start(t, env, "--config", config)
	const sessions = 600
	u := "/v1/apps/demo/users/big"
	for i := range sessions {
		p.call(t, "POST", u+"/sessions", map[string]any{"session_id": fmt.Sprintf("s%d", i)}, 201)
	}
	p.call(t, "POST", u+"/sessions/s0/events", text("a message to erase"), 201)
	p.call(t, "POST", "/v1/apps/demo/users/other/sessions", map[string]any{"session_id": "kept"}, 201)

	go func() { // the answer never comes: the server is killed
		req, _ := http.NewRequest("DELETE", p.base+u, nil)
		http.DefaultClient.Do(req)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := receipt(p, u)
		if r.State == "running" && len(r.Stores) > 0 && r.Stores[0].Removed > 0 {
			break
		}
		if r.State == "done" || time.Now().After(deadline) {
			t.Fatalf("the erasure was not caught half-way: %+v", r)
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	p = start(t, env, "--config", config)
	r := receipt(p, u)
	if r.State != "done" || !r.Verified || r.Resumed != 1 {
		t.Fatalf("after the restart the receipt = %+v", r)
	}
	// A session deleted at the instant of the kill, before its count was
	// recorded, may be missing from the count; never one too many.
	if n := r.Stores[0].Removed; r.Stores[0].Store != "sessions" || n < sessions-1 || n > sessions {
		t.Errorf("sessions removed: %+v, want %d", r.Stores[0], sessions)
	}
	if got := p.call(t, "GET", u+"/sessions", nil, 200); len(got["sessions"].([]any)) != 0 {
		t.Errorf("sessions left: %v", got)
	}
	p.call(t, "GET", "/v1/apps/demo/users/other/sessions/kept", nil, 200)
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
