package server

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/session"
)

// withSQLArtifacts keeps artifacts in the server's database.
func withSQLArtifacts(c *config.Config) {
	c.Server.Artifacts = config.Artifacts{Backend: "sql", Database: "main", MaxSizeMB: 1}
}

// fillAlice gives alice (and bob, who must not travel with her) what a
// user of a few months has: sessions with events that carry state
// deltas and tool calls, user: state, facts with history, an invalidated
// fact and a session's fact, artifacts with versions and metadata, hers
// and her sessions'.
func fillAlice(t *testing.T, s *Server) {
	u := "/v1/apps/a/users/alice"
	ok := func(w *httptest.ResponseRecorder) {
		t.Helper()
		if w.Code >= 300 {
			t.Fatalf("filling: %d %s", w.Code, w.Body)
		}
	}
	for i, id := range []string{"trip", "work", "empty"} {
		ok(do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": id, "state": map[string]any{"topic": id, "n": i}}))
	}
	text := func(author, role, text string, extra map[string]any) map[string]any {
		ev := map[string]any{"author": author, "message": map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "text": text}}}}
		for k, v := range extra {
			ev[k] = v
		}
		return ev
	}
	for _, ev := range []map[string]any{
		text("alice", "user", "Book a flight to Lisbon, canary-7f3a", map[string]any{"actions": map[string]any{"state_delta": map[string]any{"user:home": "Porto", "app:theme": "dark", "leg": 1.5}}}),
		{"author": "planner", "invocation_id": "inv-1", "message": map[string]any{"role": "assistant", "parts": []any{
			map[string]any{"type": "tool_call", "tool_call": map[string]any{"id": "c1", "name": "flights", "arguments": map[string]any{"to": "LIS"}}}}}},
		{"author": "planner", "message": map[string]any{"role": "tool", "parts": []any{
			map[string]any{"type": "tool_result", "tool_result": map[string]any{"call_id": "c1", "name": "flights", "content": map[string]any{"price": 120}}}}}},
		text("planner", "assistant", "Found one for 120 €, in May", map[string]any{"metadata": map[string]any{"model": "m-1"}}),
	} {
		ok(do(t, s, "POST", u+"/sessions/trip/events", adminKey, ev))
	}
	ok(do(t, s, "POST", u+"/sessions/work/events", adminKey, text("alice", "user", "Deploys go through Konflux", nil)))
	ok(do(t, s, "PATCH", u+"/state", adminKey, map[string]any{"state": map[string]any{"user:lang": "pt", "user:prefs": map[string]any{"seat": "aisle"}}}))
	for _, f := range []map[string]any{
		{"key": "home", "value": "Lives in Lisbon"}, {"key": "home", "value": "Lives in Porto", "category": "places", "tags": []string{"city"}},
		{"key": "pet", "value": "Has a dog named Rex"}, {"key": "deploy/tool", "value": "Konflux"},
	} {
		ok(do(t, s, "POST", u+"/facts", adminKey, f))
	}
	ok(do(t, s, "POST", u+"/facts:invalidate", adminKey, map[string]any{"key": "pet"}))
	if _, err := s.svcs.Facts.Store(t.Context(), facts.SessionScope("a", "alice", "trip"), facts.StoreRequest{Key: "mood", Value: "Excited about May",
		Source: facts.Source{Kind: facts.SourceExtracted, SessionID: "trip", EventIDs: []string{"e1"}, Model: "m-1"}}); err != nil {
		t.Fatal(err)
	}
	put := func(path, contentType, body, meta string) {
		req := httptest.NewRequest("PUT", u+path, strings.NewReader(body))
		req.Host = "127.0.0.1:8080"
		req.Header.Set("Authorization", "Bearer "+adminKey)
		req.Header.Set("Content-Type", contentType)
		if meta != "" {
			req.Header.Set("X-Hector-Metadata", meta)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		ok(w)
	}
	put("/sessions/trip/artifacts/plan.txt", "text/plain", "day 1: Alfama", `{"draft":true}`)
	put("/sessions/trip/artifacts/plan.txt", "text/plain", "day 1: Alfama, day 2: Belém", "")
	put("/sessions/work/artifacts/user:cv.pdf", "application/pdf", "%PDF-1.4 cv v1", "")
	put("/sessions/trip/artifacts/user:cv.pdf", "application/pdf", "%PDF-1.4 cv v2 \x00\xff", `{"lang":"en"}`)
	put("/sessions/work/artifacts/notes.bin", "application/octet-stream", "\x00\x01\x02", "")

	b := "/v1/apps/a/users/bob"
	ok(do(t, s, "POST", b+"/sessions", adminKey, map[string]any{"session_id": "trip"}))
	ok(do(t, s, "POST", b+"/sessions/trip/events", adminKey, text("bob", "user", "Bob goes to Oslo", nil)))
	ok(do(t, s, "POST", b+"/facts", adminKey, map[string]any{"key": "home", "value": "Bob lives in Oslo"}))
}

// cursors are the store-wide change-feed positions in events: another
// deployment's feed numbers them differently, and nothing else may differ.
var cursors = regexp.MustCompile(`,"cursor":\d+`)

// apiView is everything the API shows of a user, by request.
func apiView(t *testing.T, s *Server, user string) map[string]string {
	t.Helper()
	u := "/v1/apps/a/users/" + user
	view := map[string]string{}
	get := func(path string) string {
		t.Helper()
		w := do(t, s, "GET", u+path, adminKey, nil)
		if w.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		body := cursors.ReplaceAllString(w.Body.String(), "")
		view[path] = w.Header().Get("Content-Type") + " " + body
		return body
	}
	var list struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	json.Unmarshal([]byte(get("/sessions")), &list)
	for _, sess := range list.Sessions {
		p := "/sessions/" + sess.ID
		get(p)
		var arts struct {
			Artifacts []struct{ Name string } `json:"artifacts"`
		}
		json.Unmarshal([]byte(get(p+"/artifacts")), &arts)
		for _, a := range arts.Artifacts {
			var vs struct {
				Artifacts []struct{ Version int } `json:"artifacts"`
			}
			json.Unmarshal([]byte(get(p+"/artifacts/"+a.Name+"/versions")), &vs)
			for _, v := range vs.Artifacts {
				get(fmt.Sprintf("%s/artifacts/%s?version=%d", p, a.Name, v.Version))
			}
		}
	}
	get("/state")
	var fs struct {
		Facts []struct{ Key string } `json:"facts"`
	}
	json.Unmarshal([]byte(get("/facts")), &fs)
	for _, key := range []string{"home", "pet", "deploy/tool"} {
		get("/facts:history?key=" + key)
	}
	all, err := s.svcs.Facts.UserFacts(t.Context(), "a", user)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(all)
	view["UserFacts"] = string(raw)
	return view
}

func exportOf(t *testing.T, s *Server, user string) []byte {
	t.Helper()
	w := do(t, s, "GET", "/v1/apps/a/users/"+user+"/export", adminKey, nil)
	if w.Code != 200 {
		t.Fatalf("export: %d %s", w.Code, w.Body)
	}
	return w.Body.Bytes()
}

func importInto(s *Server, user, key string, archive []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/v1/apps/a/users/"+user+"/import", bytes.NewReader(archive))
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/x-tar")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w
}

// Export then import into a fresh server reproduces the user's API view
// exactly: sessions in their order, events in order with their IDs and
// times, state, facts with their history, artifact versions with their
// content, type, metadata and times. From SQLite into each database.
func TestExportThenImportReproducesTheUser(t *testing.T) {
	from := serverOn(t, "sqlite", t.TempDir()+"/from.db", withSQLArtifacts)
	fillAlice(t, from)
	want := apiView(t, from, "alice")
	archive := exportOf(t, from, "alice")
	if strings.Contains(string(archive), "Oslo") {
		t.Fatal("alice's archive holds bob's data")
	}
	for _, driver := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(driver, func(t *testing.T) {
			to := serverOn(t, driver, freshDSN(t, driver), withSQLArtifacts)
			// app: keys are every user's: the app's state travels on its own.
			do(t, to, "PATCH", "/v1/apps/a/state", adminKey, map[string]any{"state": map[string]any{"app:theme": "dark"}})
			if w := importInto(to, "alice", aliceKey, archive); w.Code != 403 {
				t.Errorf("alice importing herself: %d, want 403 (an app's credential imports)", w.Code)
			}
			w := importInto(to, "alice", appAKey, archive)
			if w.Code != 201 {
				t.Fatalf("import: %d %s", w.Code, w.Body)
			}
			const summary = `{"from":{"app_name":"a","user_id":"alice"},"sessions":3,"events":5,"user_state_keys":3,"fact_versions":5,"artifact_versions":5}`
			if strings.TrimSpace(w.Body.String()) != summary {
				t.Errorf("import summary: %s, want %s", w.Body, summary)
			}
			got := apiView(t, to, "alice")
			var paths []string
			for p := range want {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				// A moved fact's source is "imported" by the importer, the
				// archive's own claim kept apart: as it was, it is that claim.
				if claimed := asClaimed(t, got[p], "app-a"); claimed != got[p] {
					got[p] = claimed
				} else if strings.Contains(p, "facts") && strings.Contains(want[p], `"source"`) {
					t.Errorf("%s after the move: no source is imported by app-a: %s", p, got[p])
				}
				if got[p] != want[p] {
					t.Errorf("%s after the move:\n%s\nwant\n%s", p, got[p], want[p])
				}
			}
			if len(got) != len(want) {
				t.Errorf("the moved view has %d requests, the original %d", len(got), len(want))
			}
			if w := do(t, to, "POST", "/v1/apps/a/users/alice/memory:search", adminKey, map[string]any{"query": "Konflux"}); !strings.Contains(w.Body.String(), "Deploys go through Konflux") {
				t.Errorf("searching the moved user: %s", w.Body)
			}
			if w := importInto(to, "alice", appAKey, archive); w.Code != 409 || !strings.Contains(w.Body.String(), "erase the user first") {
				t.Errorf("importing into a user who has data: %d %s", w.Code, w.Body)
			}
		})
	}
}

// An archive of format 2 (user.jsonl held the state, facts and
// artifacts' descriptions; testdata/archive-format2.tar is fillAlice's,
// written by that Hector) is still restored whole: every item counted,
// and what it wrote is what a format 3 export of it carries elsewhere.
func TestImportReadsFormat2(t *testing.T) {
	legacy, err := os.ReadFile("testdata/archive-format2.tar")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(legacy, []byte(`"format":2`)) {
		t.Fatal("the fixture is not of format 2")
	}
	first := serverOn(t, "sqlite", t.TempDir()+"/first.db", withSQLArtifacts)
	w := importInto(first, "alice", adminKey, legacy)
	const summary = `{"from":{"app_name":"a","user_id":"alice"},"sessions":3,"events":5,"user_state_keys":3,"fact_versions":5,"artifact_versions":5}`
	if w.Code != 201 || strings.TrimSpace(w.Body.String()) != summary {
		t.Fatalf("importing format 2: %d %s, want %s", w.Code, w.Body, summary)
	}
	want := apiView(t, first, "alice")
	for path, has := range map[string]string{"/sessions/trip/artifacts/plan.txt?version=1": "day 1: Alfama", "/state": `"user:home":"Porto"`,
		"/facts:history?key=home": "Lives in Lisbon", "/sessions/trip": "Book a flight to Lisbon"} {
		if !strings.Contains(want[path], has) {
			t.Errorf("%s after importing format 2: %s, want it to hold %q", path, want[path], has)
		}
	}
	second := serverOn(t, "sqlite", t.TempDir()+"/second.db", withSQLArtifacts)
	if w := importInto(second, "alice", adminKey, exportOf(t, first, "alice")); w.Code != 201 {
		t.Fatalf("importing its export: %d %s", w.Code, w.Body)
	}
	got := apiView(t, second, "alice")
	for path := range want {
		if got[path] != want[path] {
			t.Errorf("%s after a second move:\n%s\nwant\n%s", path, got[path], want[path])
		}
	}
	if len(got) != len(want) {
		t.Errorf("the second view has %d requests, the first %d", len(got), len(want))
	}
	// A copy of alice beside her, under another user ID.
	if w := importInto(first, "carol", adminKey, legacy); w.Code != 201 || strings.TrimSpace(w.Body.String()) != summary {
		t.Errorf("copying alice as carol: %d %s", w.Code, w.Body)
	}
	// Restoring a format 2 archive checks it as it did.
	cut := bytes.Replace(legacy, []byte("day 1: Alfama"), []byte("day 1: Sintra"), 1)
	if w := importInto(second, "bob", adminKey, cut); w.Code != 400 || !strings.Contains(w.Body.String(), "SHA-256") {
		t.Errorf("a changed artifact in format 2: %d %s", w.Code, w.Body)
	}
}

// Every store that holds something of a user and is not derived from the
// others is in their archive: after an export, an erasure and the import,
// each holds again what it held. A store added to the erasure's list (the
// one list) and left out of the archive fails here.
func TestEveryStoreThatIsNotDerivedIsExported(t *testing.T) {
	s := serverOn(t, "sqlite", t.TempDir()+"/h.db", withSQLArtifacts)
	fillAlice(t, s)
	counts := func() map[string]int {
		out := map[string]int{}
		ids, err := session.IDs(t.Context(), s.svcs.Sessions, "a", "alice")
		if err != nil {
			t.Fatal(err)
		}
		out["sessions"] = len(ids)
		for _, st := range s.svcs.UserStores("a", "alice") {
			if st.Derived {
				continue
			}
			if st.Left == nil || st.Export == nil || st.Import == nil {
				t.Fatalf("store %s is not derived and cannot say what it holds of a user, export it or import it", st.Name)
			}
			n, err := st.Left(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			out[st.Name] = n
		}
		return out
	}
	before := counts()
	for name, n := range before {
		if n == 0 {
			t.Fatalf("the test's user holds nothing in %s: fill it there too", name)
		}
	}
	archive := exportOf(t, s, "alice")
	if w := do(t, s, "DELETE", "/v1/apps/a/users/alice", adminKey, nil); w.Code != 200 {
		t.Fatalf("erasing: %d %s", w.Code, w.Body)
	}
	for name, n := range counts() {
		if n != 0 {
			t.Fatalf("%s still holds %d after the erasure", name, n)
		}
	}
	if w := importInto(s, "alice", appAKey, archive); w.Code != 201 {
		t.Fatalf("import: %d %s", w.Code, w.Body)
	}
	if after := counts(); !maps.Equal(after, before) {
		t.Errorf("after export, erasure and import each store holds %v, before %v", after, before)
	}
}

// An archive that is not one, or is damaged, is refused with a 400 that
// says what is wrong; one refused before anything is written leaves the
// user empty.
func TestImportRefusesBadArchives(t *testing.T) {
	from := serverOn(t, "sqlite", t.TempDir()+"/from.db", withSQLArtifacts)
	fillAlice(t, from)
	archive := exportOf(t, from, "alice")
	entries := readTar(t, archive)
	rebuilt := func(edit func(name string, body []byte) (string, []byte)) []byte {
		var edited []tarEntry
		for _, e := range entries {
			if name, body := edit(e.name, e.body); name != "" {
				edited = append(edited, tarEntry{name, body})
			}
		}
		return tarOf(edited)
	}
	same := func(name string, body []byte) (string, []byte) { return name, body }
	var contents []string // artifact files, as opposed to their descriptions
	for _, e := range entries {
		if strings.HasPrefix(e.name, "artifacts/") && !strings.HasSuffix(e.name, ".json") {
			contents = append(contents, e.name)
		}
	}
	if len(contents) < 2 {
		t.Fatalf("the archive holds artifact files %q: fill alice with more", contents)
	}
	last := contents[len(contents)-1]
	to := serverOn(t, "sqlite", t.TempDir()+"/to.db", withSQLArtifacts)
	for _, tc := range []struct {
		name, want string
		archive    []byte
		empty      bool // refused before anything is written
	}{
		{"not a tar", "does not start with user.jsonl", []byte("hello"), true},
		{"empty", "does not start with user.jsonl", nil, true},
		{"another format", "format 9", rebuilt(func(name string, body []byte) (string, []byte) {
			return name, bytes.Replace(body, []byte(`"format":3`), []byte(`"format":9`), 1)
		}), true},
		{"a second line in user.jsonl", "user.jsonl, line 2", rebuilt(func(name string, body []byte) (string, []byte) {
			if name == "user.jsonl" {
				body = append(body, `{"kind":"user_state","state":{}}`+"\n"...)
			}
			return name, body
		}), true},
		{"a part this deployment lacks", "it holds the user's notes, and this deployment keeps none", rebuilt(func(name string, body []byte) (string, []byte) {
			return name, bytes.Replace(body, []byte(`"parts":["`), []byte(`"parts":["notes","`), 1)
		}), true},
		{"a fact that looks like a secret", "looks like a secret", rebuilt(func(name string, body []byte) (string, []byte) {
			return name, bytes.Replace(body, []byte("Lives in Lisbon"), []byte("password: hunter2"), 1)
		}), false},
		{"a changed artifact", "SHA-256", rebuilt(func(name string, body []byte) (string, []byte) {
			if name == contents[0] {
				body = []byte("day 1: Sintra")
			}
			return name, body
		}), false},
		{"a missing artifact", "ends without " + last, rebuilt(func(name string, body []byte) (string, []byte) {
			if name == last {
				return "", nil
			}
			return name, body
		}), false},
		{"an artifact's content out of its place", "where " + contents[0] + " should be", rebuilt(func(name string, body []byte) (string, []byte) {
			if name == contents[0] {
				return contents[0] + "x", body
			}
			return name, body
		}), false},
		{"a missing part", "does not count the", rebuilt(func(name string, body []byte) (string, []byte) {
			if name == "user_state/state.json" {
				return "", nil
			}
			return name, body
		}), false},
		{"no end", "ends before end.json", rebuilt(func(name string, body []byte) (string, []byte) {
			if name == "end.json" {
				return "", nil
			}
			return name, body
		}), false},
		{"a file past the end", "late.json after end.json", tarOf(append(slices.Clone(entries), tarEntry{"late.json", []byte("{}")})), false},
		{"a stranger file", "which is no part it announces", rebuilt(func(name string, body []byte) (string, []byte) {
			if name == "sessions/1.jsonl" {
				return "../../etc/passwd", body
			}
			return name, body
		}), false},
		{"an event twice", "have one ID", rebuilt(func(name string, body []byte) (string, []byte) {
			if strings.HasPrefix(name, "sessions/") {
				lines := bytes.SplitAfter(body, []byte("\n"))
				if len(lines) > 2 {
					body = append(body, lines[1]...)
				}
			}
			return name, body
		}), false},
		{"a second session's broken line", "sessions/2.jsonl: the archive is not one this Hector can restore: line 3", rebuilt(func(name string, body []byte) (string, []byte) {
			if name == "sessions/2.jsonl" {
				body = append(body, "{not json\n"...)
			}
			return name, body
		}), false},
		{"a session twice", `session \"trip\" is in it twice`, rebuilt(func(name string, body []byte) (string, []byte) {
			if name == "sessions/2.jsonl" {
				body = bytes.Replace(body, []byte(`"id":"work"`), []byte(`"id":"trip"`), 1)
			}
			return name, body
		}), false},
		{"an invalid role", "wizard", rebuilt(func(name string, body []byte) (string, []byte) {
			if name == "sessions/2.jsonl" {
				body = bytes.Replace(body, []byte(`"role":"user"`), []byte(`"role":"wizard"`), 1)
			}
			return name, body
		}), false},
		{"junk entries", "which is no part it announces", rebuilt(func(name string, body []byte) (string, []byte) {
			if name == "sessions/2.jsonl" {
				return "junk", body
			}
			return name, body
		}), false},
		{"the original", "", rebuilt(same), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := importInto(to, "alice", adminKey, tc.archive)
			if tc.name == "the original" {
				if w.Code != 201 {
					t.Errorf("the archive rebuilt unchanged: %d %s", w.Code, w.Body)
				}
				do(t, to, "DELETE", "/v1/apps/a/users/alice", adminKey, nil)
				return
			}
			if w.Code != 400 || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("import: %d %s; want 400 saying %q", w.Code, w.Body, tc.want)
			}
			refusedLeavesNothing(t, to, archive)
		})
	}
	// Cut anywhere, inside a file or between two, an archive is a 400 and
	// leaves nothing; cut only in the zeros that end it, it loses nothing
	// and may be taken whole.
	whole := importInto(to, "alice", adminKey, archive).Body.String()
	do(t, to, "DELETE", "/v1/apps/a/users/alice", adminKey, nil)
	for cut := 0; cut < len(archive); cut += 509 {
		w := importInto(to, "alice", adminKey, archive[:cut])
		if w.Code == 201 && w.Body.String() == whole && !slices.ContainsFunc(archive[cut:], func(b byte) bool { return b != 0 }) {
			do(t, to, "DELETE", "/v1/apps/a/users/alice", adminKey, nil)
			continue
		}
		if w.Code != 400 {
			t.Errorf("the archive cut at byte %d of %d: %d %s", cut, len(archive), w.Code, w.Body)
		}
		refusedLeavesNothing(t, to, archive)
	}
}

// refusedLeavesNothing checks that a refused import left alice with
// nothing: the original archive then imports (the corrected retry), and is
// erased again for the next case.
func refusedLeavesNothing(t *testing.T, to *Server, archive []byte) {
	t.Helper()
	u := "/v1/apps/a/users/alice"
	for _, path := range []string{"/sessions", "/state", "/facts", "/sessions/trip/artifacts"} {
		if w := do(t, to, "GET", u+path, adminKey, nil); w.Code == 200 && strings.Contains(w.Body.String(), "canary") ||
			w.Code == 200 && !regexp.MustCompile(`:\[\]|:\{\}`).MatchString(w.Body.String()) {
			t.Errorf("after a refused import, GET %s: %s", path, w.Body)
		}
	}
	if w := importInto(to, "alice", adminKey, archive); w.Code != 201 {
		t.Fatalf("the corrected retry: %d %s", w.Code, w.Body)
	}
	if w := do(t, to, "DELETE", u, adminKey, nil); w.Code != 200 {
		t.Fatalf("erasing after the retry: %d %s", w.Code, w.Body)
	}
}

// asClaimed rewrites in a view every source imported by whom to the
// source its archive claimed.
func asClaimed(t *testing.T, view, by string) string {
	t.Helper()
	re := regexp.MustCompile(`"source":\{"kind":"imported","by":"` + regexp.QuoteMeta(by) + `","claimed":(\{[^{}]*\})\}`)
	return re.ReplaceAllString(view, `"source":$1`)
}

type tarEntry struct {
	name string
	body []byte
}

func tarOf(entries []tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o600, Size: int64(len(e.body))})
		tw.Write(e.body)
	}
	tw.Close()
	return buf.Bytes()
}

func readTar(t *testing.T, archive []byte) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		out = append(out, tarEntry{h.Name, body})
	}
}

// Two imports into one empty user at once: both find the user empty, the
// first to record itself writes, the other is refused with a 409, and the
// user holds one archive, not both mixed.
func TestConcurrentImportsIntoOneUser(t *testing.T) {
	s := serverOn(t, "sqlite", t.TempDir()+"/h.db", withSQLArtifacts)
	fillAlice(t, s)
	archive := exportOf(t, s, "alice")
	// The first import is sent its user.jsonl only: it has found the user
	// empty, recorded itself, and waits for its first session.
	head, err := tar.NewReader(bytes.NewReader(archive)).Next()
	if err != nil || head.Name != "user.jsonl" {
		t.Fatalf("the archive starts with %v, %v", head, err)
	}
	sent := 512 + (head.Size+511)/512*512
	body, send := io.Pipe()
	first := make(chan *httptest.ResponseRecorder)
	go func() {
		req := httptest.NewRequest("POST", "/v1/apps/a/users/twin/import", body)
		req.Host = "127.0.0.1:8080"
		req.Header.Set("Authorization", "Bearer "+appAKey)
		req.Header.Set("Content-Type", "application/x-tar")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		first <- w
	}()
	if _, err := send.Write(archive[:sent]); err != nil {
		t.Fatal(err)
	}
	for recorded := false; !recorded; {
		records, err := s.svcs.Imports.Unfinished(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		recorded = len(records) == 1 && records[0].Writing
		runtime.Gosched()
	}
	if w := importInto(s, "twin", appAKey, archive); w.Code != 409 || !strings.Contains(w.Body.String(), "being imported into") {
		t.Errorf("the second import, while the first writes: %d %s; want 409", w.Code, w.Body)
	}
	send.Write(archive[sent:])
	send.Close()
	if w := <-first; w.Code != 201 {
		t.Fatalf("the first import: %d %s", w.Code, w.Body)
	}
	ids, err := session.IDs(t.Context(), s.svcs.Sessions, "a", "twin")
	if err != nil || len(ids) != 3 {
		t.Errorf("twin holds sessions %q (%v), want the archive's 3", ids, err)
	}
	if records, err := s.svcs.Imports.Unfinished(t.Context()); err != nil || len(records) != 0 {
		t.Errorf("records left once both imports ended: %+v, %v", records, err)
	}
	if w := importInto(s, "twin", appAKey, archive); w.Code != 409 || !strings.Contains(w.Body.String(), "erase the user first") {
		t.Errorf("an import after the first ended: %d %s; want 409", w.Code, w.Body)
	}
}
