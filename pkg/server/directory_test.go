package server

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDirectory(t *testing.T) {
	s := newTestServer(t, nil)
	for _, owner := range [][2]string{{"a", "alice"}, {"a", "bob"}, {"b", "carol"}} {
		do(t, s, "POST", "/v1/apps/"+owner[0]+"/users/"+owner[1]+"/sessions", adminKey, map[string]any{})
	}
	if w := do(t, s, "GET", "/v1/whoami", aliceKey, nil); w.Code != 200 || !strings.Contains(w.Body.String(), `"user":"alice"`) || !strings.Contains(w.Body.String(), `"role":"user"`) {
		t.Errorf("whoami as alice: %d %s", w.Code, w.Body)
	}
	var users struct {
		Users []struct{ App, User string }
	}
	w := do(t, s, "GET", "/v1/apps/a/users", appAKey, nil)
	json.Unmarshal(w.Body.Bytes(), &users)
	if w.Code != 200 || len(users.Users) != 2 || users.Users[0].User != "alice" || users.Users[1].User != "bob" {
		t.Errorf("app a's users: %d %s", w.Code, w.Body)
	}
	for _, c := range []struct{ key, path string }{{appBKey, "/v1/apps/a/users"}, {aliceKey, "/v1/apps/a/users"}, {appAKey, "/v1/users"}, {aliceKey, "/v1/index"}} {
		if w := do(t, s, "GET", c.path, c.key, nil); w.Code != 403 {
			t.Errorf("GET %s with a narrower credential: %d", c.path, w.Code)
		}
	}
	w = do(t, s, "GET", "/v1/users", adminKey, nil)
	json.Unmarshal(w.Body.Bytes(), &users)
	if len(users.Users) != 3 || users.Users[2].App != "b" {
		t.Errorf("every user: %s", w.Body)
	}
	w = do(t, s, "GET", "/v1/index", adminKey, nil)
	var index struct {
		Type    string
		Store   string
		Lag     *int64
		Rebuild struct{ State string }
	}
	json.Unmarshal(w.Body.Bytes(), &index)
	if w.Code != 200 || index.Type != "keyword" || index.Lag == nil || index.Rebuild.State != "idle" || index.Store == "" {
		t.Errorf("index status: %d %s", w.Code, w.Body)
	}
}
