package server

import (
	"encoding/json"
	"fmt"
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
	// The API's keys are snake_case, the rebuild's progress's too.
	var raw struct {
		Rebuild struct{ Progress map[string]any }
	}
	json.Unmarshal(w.Body.Bytes(), &raw)
	for _, key := range []string{"sessions", "events", "indexed", "cursor", "head", "done"} {
		if _, ok := raw.Rebuild.Progress[key]; !ok || len(raw.Rebuild.Progress) != 6 {
			t.Errorf("rebuild.progress = %v; want its keys snake_case, %q among them", raw.Rebuild.Progress, key)
		}
	}
}

// The users list holds whoever holds memory: sessions, facts, or both, in
// one order (app, then user), and pages through the two stores together
// without losing or repeating anyone.
func TestDirectoryListsUsersWithFactsOnly(t *testing.T) {
	s := newTestServer(t, nil)
	for _, u := range []string{"alice", "carol", "erin"} {
		do(t, s, "POST", "/v1/apps/a/users/"+u+"/sessions", adminKey, map[string]any{})
	}
	for _, u := range []string{"Bea", "carol", "dave", "émile"} {
		if w := do(t, s, "POST", "/v1/apps/a/users/"+u+"/facts", adminKey, map[string]any{"key": "home", "value": "Lives in Lisbon"}); w.Code != 201 {
			t.Fatalf("storing %s's fact: %d %s", u, w.Code, w.Body)
		}
	}
	type row struct {
		User           string
		Sessions       int
		Facts          int
		LastUpdateTime *string `json:"last_update_time"`
	}
	var all []row
	token := ""
	for pages := 0; ; pages++ {
		var page struct {
			Users         []row
			NextPageToken string `json:"next_page_token"`
		}
		w := do(t, s, "GET", "/v1/apps/a/users?page_size=2&page_token="+token, appAKey, nil)
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &page) != nil || len(page.Users) > 2 || pages > 4 {
			t.Fatalf("page %d: %d %s", pages, w.Code, w.Body)
		}
		all = append(all, page.Users...)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	var got []string
	for _, u := range all {
		got = append(got, fmt.Sprintf("%s:%d/%d", u.User, u.Sessions, u.Facts))
		if (u.LastUpdateTime != nil) != (u.Sessions > 0) {
			t.Errorf("%s: last update %v with %d sessions", u.User, u.LastUpdateTime, u.Sessions)
		}
	}
	if want := "Bea:0/1 alice:1/0 carol:1/1 dave:0/1 erin:1/0 émile:0/1"; strings.Join(got, " ") != want {
		t.Errorf("users, paged by 2: %s, want %s", strings.Join(got, " "), want)
	}
}
