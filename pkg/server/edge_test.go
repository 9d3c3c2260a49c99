package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// onEachDatabase runs fn on a server whose sessions and facts are in
// SQLite, PostgreSQL and MySQL in turn (each skipped without its server).
func onEachDatabase(t *testing.T, fn func(t *testing.T, s *Server)) {
	for _, driver := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(driver, func(t *testing.T) { fn(t, serverOn(t, driver, freshDSN(t, driver), nil)) })
	}
}

// freshDSN is an empty database of driver's for one test: a SQLite file,
// or a fresh schema on the test servers (skipped without one).
func freshDSN(t *testing.T, driver string) string {
	switch driver {
	case "postgres":
		return sqldbtest.PostgresDSN(t)
	case "mysql":
		return sqldbtest.MySQLDSN(t)
	}
	return t.TempDir() + "/hector.db"
}

// serverOn is a test server whose sessions and facts are in one database.
func serverOn(t *testing.T, driver, dsn string, edit func(*config.Config)) *Server {
	t.Setenv("HECTOR_FACTS_KEY", strings.Repeat("ab", 32))
	return newTestServer(t, func(c *config.Config) {
		c.Databases = map[string]config.Database{"main": {Driver: driver, DSN: dsn}}
		c.Server.Sessions = config.Sessions{Backend: "sql", Database: "main"}
		c.Server.Facts = config.Facts{Backend: "sql", Database: "main"}
		c.Server.Limits.MaxBodyMB = 4 // room for an event over the session's limit
		if edit != nil {
			edit(c)
		}
	})
}

func send(s *Server, method, path, contentType, body string, edit ...func(*http.Request)) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Authorization", "Bearer "+adminKey)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, e := range edit {
		e(req)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w
}

// Bad input is refused with a 400 that says what is wrong, changes
// nothing, and is never a 500, on every database.
func TestBadInputIsRefused(t *testing.T) {
	onEachDatabase(t, func(t *testing.T, s *Server) {
		u := "/v1/apps/a/users/alice"
		if w := send(s, "POST", u+"/sessions", "application/json", `{"session_id": "s"}`); w.Code != 201 {
			t.Fatalf("create: %d %s", w.Code, w.Body)
		}
		event := func(role string) string {
			return fmt.Sprintf(`{"author": "a", "message": {"role": %q, "parts": [{"type": "text", "text": "hi"}]}}`, role)
		}
		deep := `{"author": "a", "actions": {"state_delta": {"k": ` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}}}`
		for _, tc := range []struct {
			name, method, path, contentType, body string
			status                                int
			says                                  string
		}{
			{"huge ttl", "POST", u + "/facts", "application/json", `{"key": "k", "value": "v", "ttl_seconds": 18446830473}`, 400, "ttl_seconds 18446830473 is too large"},
			{"ttl past a duration", "POST", u + "/facts", "application/json", `{"key": "k", "value": "v", "ttl_seconds": 4611686018427387904}`, 400, "too large"},
			{"invalid UTF-8 in a fact key", "GET", u + "/facts/%FF", "", "", 400, "not valid UTF-8"},
			{"invalid UTF-8 in a query", "GET", u + "/facts?prefix=%FF", "", "", 400, "not valid UTF-8"},
			{"invalid UTF-8 in an app", "GET", "/v1/apps/%FF/users", "", "", 400, "not valid UTF-8"},
			{"NUL in a path", "GET", u + "/sessions/a%00b", "", "", 400, "NUL"},
			{"invalid UTF-8 in a body", "POST", u + "/sessions", "application/json", "{\"session_id\": \"\xff\xfe\"}", 400, "not valid UTF-8"},
			{"a null body", "POST", u + "/sessions/s/events", "application/json", `null`, 400, "JSON object"},
			{"an array body", "POST", u + "/sessions/s/events", "application/json", `[]`, 400, "JSON object"},
			{"a partial event", "POST", u + "/sessions/s/events", "application/json", `{"author": "a", "partial": true}`, 400, "partial"},
			{"a negative expected_seq", "POST", u + "/sessions/s/events", "application/json", `{"author": "a", "expected_seq": -1}`, 400, "expected_seq -1"},
			{"nesting 5,000 deep", "POST", u + "/sessions/s/events", "application/json", deep, 400, "more than 64 deep"},
			{"an unknown role", "POST", u + "/sessions/s/events", "application/json", event("robot"), 400, "user, assistant, system or tool"},
			{"a capitalised role", "POST", u + "/sessions/s/events", "application/json", event("User"), 400, "lowercase"},
			{"text/plain", "POST", u + "/sessions/s/events", "text/plain", event("user"), 415, "Content-Type: application/json"},
			{"a form", "POST", u + "/facts", "application/x-www-form-urlencoded", `{"key": "k", "value": "v"}`, 415, "--json"},
			{"no content type", "POST", u + "/facts:forget", "", `{"selector": "all"}`, 415, "none"},
			{"a C1 control in a session ID", "POST", u + "/sessions", "application/json", `{"session_id": "ab\u0085"}`, 400, "U+0085 (a control character) at character 3"},
			{"a bidi override in a session ID", "POST", u + "/sessions", "application/json", `{"session_id": "ab\u202ec"}`, 400, "U+202E (a bidirectional control) at character 3"},
			{"a zero-width space in a user ID", "POST", "/v1/apps/a/users/al%E2%80%8Bice/sessions", "application/json", `{}`, 400, "U+200B"},
			{"a BOM in an app", "POST", "/v1/apps/%EF%BB%BFa/users/alice/sessions", "application/json", `{}`, 400, "U+FEFF"},
			{"a session ID of spaces", "POST", u + "/sessions", "application/json", `{"session_id": "   "}`, 400, "only spaces"},
			{"a newline in an author", "POST", u + "/sessions/s/events", "application/json", `{"author": "ali\nce"}`, 400, "author"},
			{"a NUL in an author", "POST", u + "/sessions/s/events", "application/json", `{"author": "ali\u0000ce"}`, 400, "author"},
			{"a query over 8 KiB", "POST", u + "/memory:search", "application/json", `{"query": "` + strings.Repeat("a ", 4097) + `"}`, 400, "query is 8194 bytes, over the limit of 8192"},
		} {
			w := send(s, tc.method, tc.path, tc.contentType, tc.body)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.says) {
				t.Errorf("%s: %d %s, want %d saying %q", tc.name, w.Code, w.Body, tc.status, tc.says)
			}
		}
		// Nothing was stored by any of them.
		if w := send(s, "GET", u+"/sessions/s", "", ""); !strings.Contains(w.Body.String(), `"last_seq":0`) {
			t.Errorf("a refused request appended: %s", w.Body)
		}
		if w := send(s, "GET", u+"/facts", "", ""); w.Body.String() != "{\"facts\":[]}\n" {
			t.Errorf("a refused request stored a fact: %s", w.Body)
		}
		if w := send(s, "GET", u+"/sessions", "", ""); strings.Count(w.Body.String(), `"id"`) != 1 {
			t.Errorf("a refused request created a session: %s", w.Body)
		}
		// Roles as other frameworks write them are taken, in Hector's words.
		w := send(s, "POST", u+"/sessions/s/events", "application/json", event("model"))
		if w.Code != 201 || !strings.Contains(w.Body.String(), `"role":"assistant"`) {
			t.Errorf("a model message: %d %s, want it stored as the assistant's", w.Code, w.Body)
		}
		if w := send(s, "POST", u+"/facts", "application/json; charset=utf-8", `{"key": "k", "value": "v", "ttl_seconds": 7200}`); w.Code != 201 {
			t.Errorf("a fact with JSON's content type and a charset: %d %s", w.Code, w.Body)
		}
	})
}

// A server on loopback answers to loopback names only (or those
// configured), so a page whose name is pointed at 127.0.0.1 (DNS
// rebinding) cannot reach it; browsers' writes from another origin are
// refused on every route.
func TestLoopbackHostsAndOrigins(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) { c.Server.AllowedHosts = []string{"hector.internal"} })
	host := func(h string) func(*http.Request) { return func(r *http.Request) { r.Host = h } }
	for h, want := range map[string]int{"evil.example": 403, "evil.example:8080": 403, "127.0.0.2:1": 200, "localhost": 200,
		"[::1]:8080": 200, "hector.internal:8080": 200, "HECTOR.internal": 200, "127.0.0.1.evil.example": 403} {
		w := send(s, "GET", "/v1/whoami", "", "", host(h))
		if w.Code != want {
			t.Errorf("Host %s: %d %s, want %d", h, w.Code, w.Body, want)
		}
		if want == 403 && !strings.Contains(w.Body.String(), "server.allowed_hosts") {
			t.Errorf("Host %s: the refusal does not say how to allow it: %s", h, w.Body)
		}
	}
	public := newTestServer(t, func(c *config.Config) { c.Server.Address = "0.0.0.0:8080" })
	if w := send(public, "GET", "/v1/whoami", "", "", host("hector.example.com")); w.Code != 200 {
		t.Errorf("a server on all interfaces refused a host name: %d %s", w.Code, w.Body)
	}

	crossSite := func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }
	otherOrigin := func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }
	for _, edit := range []func(*http.Request){crossSite, otherOrigin} {
		for _, path := range []string{"/v1/apps/a/users/alice/sessions", "/v1/apps/a/users/alice/facts:forget", "/memories/add", "/mcp"} {
			if w := send(s, "POST", path, "application/json", `{}`, edit); w.Code != 403 || !strings.Contains(w.Body.String(), "cross_origin") {
				t.Errorf("POST %s from another origin: %d %s", path, w.Code, w.Body)
			}
		}
	}
	sameOrigin := func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-origin") }
	if w := send(s, "POST", "/v1/apps/a/users/alice/sessions", "application/json", `{}`, sameOrigin); w.Code != 201 {
		t.Errorf("a same-origin write: %d %s", w.Code, w.Body)
	}
	if w := send(s, "GET", "/v1/apps/a/users/alice/sessions", "", "", crossSite); w.Code != 200 {
		t.Errorf("a cross-site read (which the browser keeps from the page): %d", w.Code)
	}
}

// An event whose text holds U+0000, appended over REST, is indexed in the
// PostgreSQL keyword index by its words: the follower does not stall on it
// (before, it failed every 2 s for every user, for good).
func TestNULTextInThePostgresKeywordIndex(t *testing.T) {
	s := serverOn(t, "postgres", sqldbtest.PostgresDSN(t), func(c *config.Config) {
		c.Server.Index = config.Index{Type: "keyword", Store: "postgres", Postgres: config.Postgres{Table: "hector_search"}}
	})
	u := "/v1/apps/a/users/alice"
	send(s, "POST", u+"/sessions", "application/json", `{"session_id": "s"}`)
	if w := send(s, "POST", u+"/sessions/s/events", "application/json",
		`{"author": "user", "message": {"role": "user", "parts": [{"type": "text", "text": "the zeppelin\u0000leaves at noon"}]}}`); w.Code != 201 {
		t.Fatalf("append: %d %s", w.Code, w.Body)
	}
	send(s, "POST", "/v1/apps/a/users/bob/sessions", "application/json", `{"session_id": "b"}`)
	send(s, "POST", "/v1/apps/a/users/bob/sessions/b/events", "application/json",
		`{"author": "user", "message": {"role": "user", "parts": [{"type": "text", "text": "bob rides the zeppelin"}]}}`)
	if err := s.svcs.Index.CatchUp(t.Context(), s.svcs.Sessions); err != nil {
		t.Fatalf("the follower: %v", err)
	}
	if w := send(s, "GET", "/v1/index", "", ""); !strings.Contains(w.Body.String(), `"lag":0`) || !strings.Contains(w.Body.String(), `"total":0`) {
		t.Errorf("/v1/index: %s, want no lag and nothing skipped", w.Body)
	}
	for user, want := range map[string]string{"alice": "leaves at noon", "bob": "bob rides"} {
		if w := send(s, "POST", "/v1/apps/a/users/"+user+"/memory:search", "application/json", `{"query": "zeppelin"}`); !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s's search: %d %s", user, w.Code, w.Body)
		}
	}
}

// An upload whose type the client did not really say is detected:
// curl --data-binary @file sends every file as a form.
func TestArtifactTypeSentAsAFormIsDetected(t *testing.T) {
	s := newTestServer(t, nil)
	do(t, s, "POST", "/v1/apps/a/users/alice/sessions", adminKey, map[string]any{"session_id": "s"})
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
	for contentType, want := range map[string]string{
		"application/x-www-form-urlencoded":                "image/png",
		"application/x-www-form-urlencoded; charset=UTF-8": "image/png",
		"application/octet-stream":                         "image/png",
		"":                                                 "image/png",
		"image/webp":                                       "image/webp", // what the client says, it says
	} {
		w := send(s, "PUT", "/v1/apps/a/users/alice/sessions/s/artifacts/dot", contentType, png)
		if w.Code != 201 || !strings.Contains(w.Body.String(), `"mime_type":"`+want+`"`) {
			t.Errorf("sent as %q: %d %s; want %s", contentType, w.Code, w.Body, want)
		}
	}
}

// A bad body is explained in JSON's words, never Go's; a PATCH of state
// without its wrapper says how to wrap it; a path that takes other methods
// answers 405 with Allow.
func TestErrorsSpeakTheClientsLanguage(t *testing.T) {
	s := newTestServer(t, nil)
	u := "/v1/apps/a/users/alice"
	send(s, "POST", u+"/sessions", "application/json", `{"session_id": "s"}`)
	goNames := regexp.MustCompile(`session\\.|interface \\{|map\\[|\\[\\]|int64|float64|\\bint\\b`)
	for _, tc := range []struct{ method, path, body, want string }{
		{"POST", u + "/sessions/s/events", `{"author": "a", "message": "hello"}`, `field "message" must be an object such as {"role": "user"`},
		{"POST", u + "/sessions/s/events", `{"author": "a", "message": {"role": "user", "parts": "x"}}`, `field "message.parts" must be an array of objects, not a JSON string`},
		{"POST", u + "/sessions/s/events", `{"author": 5}`, `field "author" must be a string, not a JSON number`},
		{"POST", u + "/sessions/s/events", `{"author": "a", "actions": {"state_delta": [1]}}`, `field "actions.state_delta" must be an object, not a JSON array`},
		{"POST", u + "/facts", `{"key": "k", "value": "v", "ttl_seconds": "x"}`, `field "ttl_seconds" must be a whole number, not a JSON string`},
		{"POST", u + "/facts", `{"key": "k", "value": "v", "tags": "x"}`, `field "tags" must be an array of strings`},
		{"PATCH", u + "/state", `{"user:plan": "pro"}`, `the body must be {"state": {…}}: put the keys (such as "user:plan") inside "state"`},
		{"PATCH", u + "/state", `{}`, `"state" is missing`},
	} {
		w := send(s, tc.method, tc.path, "application/json", tc.body)
		var e struct{ Error struct{ Message string } }
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != 400 || !strings.Contains(e.Error.Message, tc.want) || goNames.MatchString(e.Error.Message) {
			t.Errorf("%s %s %s: %d %s; want 400 saying %s, and no Go type", tc.method, tc.path, tc.body, w.Code, w.Body, tc.want)
		}
	}
	for path, allow := range map[string]string{u + "/sessions": "POST, GET", u: "DELETE", u + "/sessions/s": "GET, PATCH, DELETE"} {
		w := send(s, "PUT", path, "application/json", `{}`)
		if w.Code != 405 || w.Header().Get("Allow") != allow || !strings.Contains(w.Body.String(), "not PUT") {
			t.Errorf("PUT %s: %d %q %s; want 405 with Allow %q", path, w.Code, w.Header().Get("Allow"), w.Body, allow)
		}
	}
	if w := send(s, "GET", "/v1/nothing-here", "", ""); w.Code != 404 {
		t.Errorf("a path no route has: %d", w.Code)
	}
}

// A search over a huge message answers a snippet around the words asked
// for, marked truncated; full_content asks for the whole.
func TestSearchAnswersSnippets(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) { c.Server.Limits.MaxBodyMB = 4 })
	u := "/v1/apps/a/users/alice"
	do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": "s"})
	huge := strings.Repeat("filler words without meaning ", 30000) + "the zeppelin lands at dusk " + strings.Repeat("more filler ", 10000)
	if w := do(t, s, "POST", u+"/sessions/s/events", adminKey, map[string]any{"author": "alice",
		"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": huge}}}}); w.Code != 201 {
		t.Fatalf("append: %d %s", w.Code, w.Body)
	}
	var got struct {
		Results []struct {
			Content   string `json:"content"`
			Truncated bool   `json:"truncated"`
		} `json:"results"`
	}
	w := do(t, s, "POST", u+"/memory:search", adminKey, map[string]any{"query": "zeppelin"})
	json.Unmarshal(w.Body.Bytes(), &got)
	if len(got.Results) != 1 || !got.Results[0].Truncated || !strings.Contains(got.Results[0].Content, "zeppelin lands at dusk") || w.Body.Len() > 4000 {
		t.Errorf("search: %d bytes, %+v", w.Body.Len(), got.Results)
	}
	w = do(t, s, "POST", u+"/memory:search", adminKey, map[string]any{"query": "zeppelin", "full_content": true})
	got.Results = nil
	json.Unmarshal(w.Body.Bytes(), &got)
	if len(got.Results) != 1 || got.Results[0].Truncated || len(got.Results[0].Content) < len(huge)-1 {
		t.Errorf("full_content: %d bytes, truncated %v", w.Body.Len(), got.Results[0].Truncated)
	}
}

// REST pages back through a session's events with recent and before_seq,
// as MCP's get_session does.
func TestSessionEventsPageBack(t *testing.T) {
	s := newTestServer(t, nil)
	u := "/v1/apps/a/users/alice/sessions"
	do(t, s, "POST", u, adminKey, map[string]any{"session_id": "s"})
	for i := range 7 {
		do(t, s, "POST", u+"/s/events", adminKey, map[string]any{"author": "a", "message": map[string]any{"role": "user",
			"parts": []any{map[string]any{"type": "text", "text": fmt.Sprint("m", i)}}}})
	}
	var pages []string
	for before := ""; ; {
		var got struct {
			Events []struct {
				Seq     int64
				Message struct{ Parts []struct{ Text string } }
			}
		}
		w := do(t, s, "GET", u+"/s?recent=3"+before, adminKey, nil)
		json.Unmarshal(w.Body.Bytes(), &got)
		if w.Code != 200 || len(got.Events) == 0 {
			break
		}
		var page []string
		for _, e := range got.Events {
			page = append(page, e.Message.Parts[0].Text)
		}
		pages = append(pages, strings.Join(page, " "))
		before = fmt.Sprintf("&before_seq=%d", got.Events[0].Seq)
	}
	if want := []string{"m4 m5 m6", "m1 m2 m3", "m0"}; !slices.Equal(pages, want) {
		t.Errorf("pages = %q, want %q", pages, want)
	}
	if w := do(t, s, "GET", u+"/s?before_seq=-1", adminKey, nil); w.Code != 400 {
		t.Errorf("a negative before_seq: %d", w.Code)
	}
}

// A session has an optional title, given at creation or by a PATCH, and
// the list can put the session updated last first.
func TestSessionTitlesAndUpdateOrder(t *testing.T) {
	s := newTestServer(t, nil)
	u := "/v1/apps/a/users/alice/sessions"
	if w := do(t, s, "POST", u, aliceKey, map[string]any{"session_id": "trip", "title": "Trip to Lisbon"}); w.Code != 201 || !strings.Contains(w.Body.String(), `"title":"Trip to Lisbon"`) {
		t.Fatalf("create with a title: %d %s", w.Code, w.Body)
	}
	do(t, s, "POST", u, aliceKey, map[string]any{"session_id": "chores"})
	if w := do(t, s, "PATCH", u+"/chores", aliceKey, map[string]any{"title": "Chores"}); w.Code != 200 || !strings.Contains(w.Body.String(), `"title":"Chores"`) {
		t.Errorf("PATCH a title: %d %s", w.Code, w.Body)
	}
	for body, want := range map[string]string{`{}`: `{"title": "…"}`, `{"title": "a\u0007b"}`: "control character", `{"state": {}}`: `unknown field "state"`} {
		w := send(s, "PATCH", u+"/chores", "application/json", body)
		var e struct{ Error struct{ Message string } }
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != 400 || !strings.Contains(e.Error.Message, want) {
			t.Errorf("PATCH %s: %d %s", body, w.Code, w.Body)
		}
	}
	if w := do(t, s, "PATCH", u+"/nothing", aliceKey, map[string]any{"title": "x"}); w.Code != 404 {
		t.Errorf("PATCH a session that does not exist: %d", w.Code)
	}
	do(t, s, "POST", u+"/trip/events", aliceKey, map[string]any{"author": "alice", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "written last"}}}})
	ids := func(order string) []string {
		var got struct{ Sessions []struct{ ID string } }
		w := do(t, s, "GET", u+order, aliceKey, nil)
		json.Unmarshal(w.Body.Bytes(), &got)
		var out []string
		for _, x := range got.Sessions {
			out = append(out, x.ID)
		}
		return out
	}
	if got := ids(""); !slices.Equal(got, []string{"chores", "trip"}) {
		t.Errorf("newest created first: %q", got)
	}
	if got := ids("?order=updated"); !slices.Equal(got, []string{"trip", "chores"}) {
		t.Errorf("last updated first: %q", got)
	}
	if w := do(t, s, "GET", u+"?order=sideways", aliceKey, nil); w.Code != 400 {
		t.Errorf("an unknown order: %d", w.Code)
	}
}

// What was deleted is gone: a deleted session, artifact and fact answer
// 404, not an empty success.
func TestDeletedIsNotFound(t *testing.T) {
	s := newTestServer(t, nil)
	u := "/v1/apps/a/users/alice"
	for _, setup := range []struct {
		method, path string
		body         any
	}{
		{"POST", u + "/sessions", map[string]any{"session_id": "s1"}},
		{"PUT", u + "/sessions/s1/artifacts/x.txt", "content"},
		{"POST", u + "/facts", map[string]any{"key": "deploy/tool", "value": "helm"}},
	} {
		if w := do(t, s, setup.method, setup.path, adminKey, setup.body); w.Code != 201 {
			t.Fatalf("%s %s: %d %s", setup.method, setup.path, w.Code, w.Body)
		}
	}
	for _, path := range []string{u + "/sessions/s1/artifacts/x.txt", u + "/facts/deploy/tool", u + "/sessions/s1"} {
		if w := do(t, s, "DELETE", path, adminKey, nil); w.Code != 204 {
			t.Fatalf("DELETE %s: %d %s", path, w.Code, w.Body)
		}
		if w := do(t, s, "GET", path, adminKey, nil); w.Code != 404 {
			t.Errorf("GET %s after its DELETE: %d %s, want 404", path, w.Code, w.Body)
		}
	}
}

// A method a path does not take is a 405 naming the ones it does, also
// where the path is a wildcard route's but for its slash (…/facts and
// …/facts/{key...}), which the router would otherwise redirect.
func TestUnroutedMethodIs405EvenBesideAWildcard(t *testing.T) {
	s := newTestServer(t, nil)
	w := do(t, s, "DELETE", "/v1/apps/a/users/alice/facts", adminKey, nil)
	if w.Code != 405 || w.Header().Get("Allow") != "POST, GET" {
		t.Errorf("DELETE …/facts: %d, Allow %q, %s; want 405 naming POST, GET", w.Code, w.Header().Get("Allow"), w.Body)
	}
}

// A number or time query parameter given empty is refused, not read as
// left out.
func TestEmptyQueryParameterIsRefused(t *testing.T) {
	s := newTestServer(t, nil)
	u := "/v1/apps/a/users/alice"
	do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": "s1"})
	for _, path := range []string{u + "/sessions?page_size=", u + "/sessions/s1?recent=", u + "/sessions/s1?after=", u + "/facts?as_of="} {
		if w := do(t, s, "GET", path, adminKey, nil); w.Code != 400 || !strings.Contains(w.Body.String(), "is empty") {
			t.Errorf("GET %s: %d %s, want 400 saying it is empty", path, w.Code, w.Body)
		}
	}
	if w := do(t, s, "GET", u+"/sessions?page_token=", adminKey, nil); w.Code != 200 {
		t.Errorf("an empty page token (the first page): %d %s", w.Code, w.Body)
	}
}
