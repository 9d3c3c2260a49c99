package server

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/config"
)

// DELETE /v1/apps/{app}/users/{user} erases the user for an app or admin
// credential, answers the receipt, and keeps it; the user's own
// credential may not, and another user is untouched.
func TestEraseUserOverHTTP(t *testing.T) {
	s := newTestServer(t, nil)
	for _, u := range []string{"alice", "bob"} {
		base := "/v1/apps/a/users/" + u
		do(t, s, "POST", base+"/sessions", adminKey, map[string]any{"session_id": u + "-s"})
		do(t, s, "POST", base+"/sessions/"+u+"-s/events", adminKey, map[string]any{"author": u,
			"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": u + " keeps bees"}}}})
		do(t, s, "POST", base+"/facts", adminKey, map[string]any{"key": "hobby", "value": u + " keeps bees"})
		do(t, s, "PATCH", base+"/state", adminKey, map[string]any{"state": map[string]any{"user:hive": "blue"}})
	}
	if w := do(t, s, "GET", "/v1/apps/a/users/alice/erasure", appAKey, nil); w.Code != 404 {
		t.Errorf("a receipt before any erasure: %d", w.Code)
	}
	if w := do(t, s, "DELETE", "/v1/apps/a/users/alice", aliceKey, nil); w.Code != 403 {
		t.Errorf("alice erasing herself without the config allowing it: %d %s", w.Code, w.Body)
	}
	if w := do(t, s, "DELETE", "/v1/apps/a/users/alice", bobKey, nil); w.Code != 403 {
		t.Errorf("bob erasing alice: %d", w.Code)
	}
	w := do(t, s, "DELETE", "/v1/apps/a/users/alice", appAKey, nil)
	var receipt struct {
		By       string `json:"by"`
		Verified bool   `json:"verified"`
		Stores   []struct {
			Store   string `json:"store"`
			Removed int    `json:"removed"`
			Left    int    `json:"left"`
		} `json:"stores"`
	}
	if json.Unmarshal(w.Body.Bytes(), &receipt); w.Code != 200 || !receipt.Verified || receipt.By != "app-a" || len(receipt.Stores) != 7 {
		t.Fatalf("erase: %d %s", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), "bees") {
		t.Errorf("the receipt holds content: %s", w.Body)
	}
	if again := do(t, s, "GET", "/v1/apps/a/users/alice/erasure", appAKey, nil); again.Body.String() != w.Body.String() {
		t.Errorf("the kept receipt = %s, want %s", again.Body, w.Body)
	}
	for path, gone := range map[string]string{"/sessions": `"sessions":[]`, "/facts": `"facts":[]`, "/state": `{}`} {
		if w := do(t, s, "GET", "/v1/apps/a/users/alice"+path, adminKey, nil); !strings.Contains(w.Body.String(), gone) {
			t.Errorf("alice's %s after erasing: %s", path, w.Body)
		}
	}
	if w := do(t, s, "POST", "/v1/apps/a/users/alice/memory:search", adminKey, map[string]any{"query": "bees"}); !strings.Contains(w.Body.String(), `"results":[]`) {
		t.Errorf("searching alice after erasing: %s", w.Body)
	}
	for path, kept := range map[string]string{"/sessions": "bob-s", "/facts": "bob keeps bees", "/state": "blue"} {
		if w := do(t, s, "GET", "/v1/apps/a/users/bob"+path, adminKey, nil); !strings.Contains(w.Body.String(), kept) {
			t.Errorf("bob's %s after erasing alice: %s", path, w.Body)
		}
	}
}

// With server.auth.self_erasure a user's credential may erase its own user,
// and still no other.
func TestSelfErasure(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) { c.Server.Auth.SelfErasure = true })
	do(t, s, "POST", "/v1/apps/a/users/alice/sessions", adminKey, map[string]any{"session_id": "s"})
	if w := do(t, s, "DELETE", "/v1/apps/a/users/alice", bobKey, nil); w.Code != 403 {
		t.Errorf("bob erasing alice: %d", w.Code)
	}
	w := do(t, s, "DELETE", "/v1/apps/a/users/alice", aliceKey, nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"by":"alice"`) || !strings.Contains(w.Body.String(), `"verified":true`) {
		t.Errorf("alice erasing herself: %d %s", w.Code, w.Body)
	}
}

// GET …/export is everything held about the user as a tar archive: her
// state, her sessions with their events in order, her facts with their
// history, her artifacts' versions as stored; nothing of bob's.
func TestExportOverHTTP(t *testing.T) {
	s := newTestServer(t, nil)
	base := "/v1/apps/a/users/alice"
	do(t, s, "POST", base+"/sessions", adminKey, map[string]any{"session_id": "trip", "state": map[string]any{"topic": "Lisbon"}})
	for _, m := range []string{"Book a flight to Lisbon", "In May"} {
		do(t, s, "POST", base+"/sessions/trip/events", adminKey, map[string]any{"author": "alice",
			"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": m}}}})
	}
	do(t, s, "PUT", base+"/sessions/trip/artifacts/plan.txt", adminKey, "day 1: Alfama")
	do(t, s, "PUT", base+"/sessions/trip/artifacts/plan.txt", adminKey, "day 1: Alfama, day 2: Belém")
	do(t, s, "PATCH", base+"/state", adminKey, map[string]any{"state": map[string]any{"user:home": "Porto"}})
	do(t, s, "POST", base+"/facts", adminKey, map[string]any{"key": "home", "value": "Lives in Lisbon"})
	do(t, s, "POST", base+"/facts", adminKey, map[string]any{"key": "home", "value": "Lives in Porto"})
	do(t, s, "POST", "/v1/apps/a/users/bob/facts", adminKey, map[string]any{"key": "home", "value": "Bob lives in Oslo"})

	if w := do(t, s, "GET", base+"/export", bobKey, nil); w.Code != 403 {
		t.Errorf("bob exporting alice: %d", w.Code)
	}
	w := do(t, s, "GET", base+"/export", aliceKey, nil)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/x-tar" {
		t.Fatalf("export: %d %s", w.Code, w.Header())
	}
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(w.Body.Bytes()))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(tr)
		files[h.Name] = string(raw)
	}
	user, trip := files["user_state/state.json"]+files["facts/versions.json"]+files["artifacts/1/1.json"], files["sessions/1.jsonl"]
	for _, want := range []string{`"user:home":"Porto"`, `"value":"Lives in Lisbon"`, `"superseded_by"`, `"value":"Lives in Porto"`, `"name":"plan.txt"`} {
		if !strings.Contains(user, want) {
			t.Errorf("the user's parts lack %s:\n%s", want, user)
		}
	}
	if head := files["user.jsonl"]; !strings.Contains(head, `"format":3`) || !strings.Contains(head, `"sessions":1`) || files["end.json"] != `{"files":8}`+"\n" {
		t.Errorf("the archive's first and last files: %s %s", head, files["end.json"])
	}
	if strings.Contains(fmt.Sprint(files), "Oslo") {
		t.Error("the archive holds bob's fact")
	}
	if lines := strings.Split(strings.TrimSpace(trip), "\n"); len(lines) != 3 || !strings.Contains(lines[0], `"topic":"Lisbon"`) ||
		!strings.Contains(lines[1], "Book a flight") || !strings.Contains(lines[2], "In May") {
		t.Errorf("the session's file:\n%s", trip)
	}
	if files["artifacts/1/1"] != "day 1: Alfama" || files["artifacts/1/2"] != "day 1: Alfama, day 2: Belém" {
		t.Errorf("artifact files: %q", files)
	}
}
