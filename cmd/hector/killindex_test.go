package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// A SIGKILL while writers append loses no acknowledged turn from the
// index kept on disk: what its file had not committed, the change feed
// gives it back at the restart. Each turn holds a number no other holds,
// and after the restart a search for each acknowledged one finds it.
func TestAKillWhileLoadingLosesNoTurnFromTheIndex(t *testing.T) {
	env := []string{"HECTOR_DATA_DIR=" + t.TempDir()}
	p := start(t, env)
	const writers, killAfter = 4, 400
	var mu sync.Mutex
	acked := map[int]string{} // number → session
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; ; i += writers { // until the server is gone
				sid := fmt.Sprintf("s%d-%d", w, i/(writers*25)) // a new session every 25 turns
				body, _ := json.Marshal(text(fmt.Sprintf("turn %d of the load that gets killed", 100000+i)))
				url := fmt.Sprintf("%s/v1/apps/demo/users/u%d/sessions/%s/events", p.base, w, sid)
				resp, err := http.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					return // the server is gone
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusNotFound { // the session's first turn: make it, then send it again
					made, err := http.Post(fmt.Sprintf("%s/v1/apps/demo/users/u%d/sessions", p.base, w), "application/json",
						strings.NewReader(fmt.Sprintf(`{"session_id": %q}`, sid)))
					if err != nil {
						return
					}
					made.Body.Close()
					i -= writers
					continue
				}
				if resp.StatusCode != http.StatusCreated {
					continue
				}
				mu.Lock()
				acked[100000+i] = fmt.Sprintf("u%d", w)
				n := len(acked)
				mu.Unlock()
				if n == killAfter {
					p.cmd.Process.Signal(syscall.SIGKILL) // the others are mid-request
				}
			}
		})
	}
	wg.Wait()
	p.cmd.Wait()
	if len(acked) < killAfter {
		t.Fatalf("only %d turns were acknowledged before the kill", len(acked))
	}

	p = start(t, env)
	for n, user := range acked {
		found := p.call(t, "POST", "/v1/apps/demo/users/"+user+"/memory:search", map[string]any{"query": fmt.Sprint(n), "limit": 1}, 200)
		results, _ := found["results"].([]any)
		if len(results) != 1 || !strings.Contains(fmt.Sprint(results[0]), fmt.Sprintf("turn %d of", n)) {
			t.Errorf("acknowledged turn %d of %s is not found after the restart: %v", n, user, found)
		}
	}
}
