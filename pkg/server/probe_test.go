package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/erase"
)

// badIDs are path segments no store takes: control characters, and an ID
// over 128 characters.
var badIDs = []string{"a%0Ab", "a%09b", "a%0Db", "a%7Fb", "a%1Bb", "a%00b", strings.Repeat("x", 129)}

// Every route that names an app, a user or a session refuses an ID no
// store takes with a 400, before anything is written or recorded (an
// erasure's receipt included); and a server opened afterwards on the same
// database starts and is ready.
func TestEveryRouteRefusesIDsNoStoreTakes(t *testing.T) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			dsn := freshDSN(t, driver)
			s := serverOn(t, driver, dsn, nil)
			tried := 0
			for _, rt := range s.routes {
				for _, param := range []string{"{app}", "{user}", "{id}"} {
					if !strings.Contains(rt.path, param) {
						continue
					}
					for _, bad := range badIDs {
						path := concrete(strings.Replace(rt.path, param, bad, 1))
						for _, key := range []string{adminKey, appAKey} {
							tried++
							w := send(s, rt.method, path, "application/json", `{}`, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) })
							if w.Code != http.StatusBadRequest {
								t.Errorf("%s %s: %d %s, want 400", rt.method, path, w.Code, w.Body)
							}
						}
					}
				}
			}
			if tried < 200 {
				t.Fatalf("only %d requests tried", tried)
			}
			if running, err := s.svcs.Receipts.Running(t.Context()); err != nil || len(running) != 0 {
				t.Errorf("receipts left running: %v %v", running, err)
			}
			again := serverOn(t, driver, dsn, nil)
			if err := again.svcs.Erasures.Resume(t.Context()); err != nil {
				t.Fatal(err)
			}
			again.svcs.Erasures.Wait()
			if w := send(again, "GET", "/readyz", "", ""); w.Code != 200 {
				t.Errorf("readyz after the refused requests: %d %s", w.Code, w.Body)
			}
		})
	}
}

// A user's own credential may not write or delete app state on any route
// that takes state, with either value; the app's credential may; and
// nothing a user writes reaches another user.
func TestAUserMayNotWriteAppState(t *testing.T) {
	s := newTestServer(t, nil)
	u := "/v1/apps/a/users/bob"
	if w := do(t, s, "PATCH", "/v1/apps/a/state", adminKey, map[string]any{"state": map[string]any{"app:config": "set by the admin"}}); w.Code != 200 {
		t.Fatalf("admin's PATCH: %d %s", w.Code, w.Body)
	}
	do(t, s, "POST", u+"/sessions", bobKey, map[string]any{"session_id": "s"})
	event := func(delta map[string]any) map[string]any {
		return map[string]any{"author": "bob", "actions": map[string]any{"state_delta": delta}}
	}
	for _, value := range []any{"bob was here", nil, map[string]any{"nested": true}} {
		for _, tc := range []struct {
			method, path string
			body         any
		}{
			{"POST", u + "/sessions", map[string]any{"state": map[string]any{"app:motd": value, "mine": 1}}},
			{"POST", u + "/sessions/s/events", event(map[string]any{"app:config": value})},
			{"POST", u + "/sessions/s/events", event(map[string]any{"user:fine": 1, "app:motd": value})},
		} {
			if w := do(t, s, tc.method, tc.path, bobKey, tc.body); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "app-wide") {
				t.Errorf("bob's %s %s with %v: %d %s", tc.method, tc.path, tc.body, w.Code, w.Body)
			}
		}
		// User state takes user: keys only, whoever asks.
		if w := do(t, s, "PATCH", u+"/state", bobKey, map[string]any{"state": map[string]any{"app:config": value}}); w.Code != http.StatusBadRequest {
			t.Errorf("bob's PATCH of user state with an app: key: %d %s", w.Code, w.Body)
		}
	}
	w := do(t, s, "GET", "/v1/apps/a/state", adminKey, nil)
	if got := w.Body.String(); !strings.Contains(got, `"app:config":"set by the admin"`) || strings.Contains(got, "motd") {
		t.Errorf("app state after bob's attempts: %s", got)
	}
	if w := do(t, s, "GET", u+"/sessions", bobKey, nil); strings.Count(w.Body.String(), `"id"`) != 1 {
		t.Errorf("a refused create made a session: %s", w.Body)
	}
	// The app's credential may; a user's keys land on the user they name.
	if w := do(t, s, "POST", u+"/sessions/s/events", appAKey, event(map[string]any{"app:motd": "from the app"})); w.Code != 201 {
		t.Errorf("the app's event with an app: key: %d %s", w.Code, w.Body)
	}
	if w := do(t, s, "POST", u+"/sessions/s/events", bobKey, event(map[string]any{"user:theme": "dark", "temp:scratch": 1})); w.Code != 201 {
		t.Errorf("bob's user: and temp: keys: %d %s", w.Code, w.Body)
	}
	if w := do(t, s, "GET", "/v1/apps/a/users/alice/state", adminKey, nil); strings.Contains(w.Body.String(), "theme") {
		t.Errorf("bob's user: key reached alice: %s", w.Body)
	}
	if w := do(t, s, "GET", u+"/sessions/s", bobKey, nil); strings.Contains(w.Body.String(), "scratch") {
		t.Errorf("a temp: key was stored: %s", w.Body)
	}
}

// gatedReceipts holds every Put after the first until the gate opens: an
// erasure that has recorded its start and cannot go on.
type gatedReceipts struct {
	erase.Receipts
	gate chan struct{}
	puts atomic.Int32
}

func (g *gatedReceipts) Put(ctx context.Context, r *erase.Receipt) error {
	if g.puts.Add(1) > 1 {
		<-g.gate
	}
	return g.Receipts.Put(ctx, r)
}

// An erasure that outlasts the request answers 202 with where to follow
// it; until it is verified, every route that writes to the user answers
// 409 with Retry-After, here and on another replica, while other users
// are served; then the receipt is done and verified.
func TestWritesWaitForAnErasure(t *testing.T) {
	dsn := freshDSN(t, "sqlite")
	s := serverOn(t, "sqlite", dsn, nil)
	replica := serverOn(t, "sqlite", dsn, nil)
	u := "/v1/apps/a/users/alice"
	for i := range 3 {
		do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": fmt.Sprintf("s%d", i)})
	}
	gated := &gatedReceipts{Receipts: s.svcs.Receipts, gate: make(chan struct{})}
	s.svcs.Receipts, s.eraseWait = gated, 10*time.Millisecond

	w := do(t, s, "DELETE", u, adminKey, nil)
	if w.Code != http.StatusAccepted || w.Header().Get("Location") != u+"/erasure" || w.Header().Get("Retry-After") == "" {
		t.Fatalf("a long erasure: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if r := decodeBody[erase.Receipt](t, w); r.State != erase.StateRunning {
		t.Errorf("the 202's receipt: %+v", r)
	}
	// The other replica holds her once its watch on the receipts has seen
	// the erasure, which the erasure waits for before removing anything.
	for deadline := time.Now().Add(10 * erase.WatchEvery); replica.svcs.Erasures.Held(t.Context(), "a", "alice") == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other replica does not hold alice's writes")
		}
	}
	writes := []struct {
		method, path string
		body         any
	}{
		{"POST", u + "/sessions", map[string]any{"session_id": "new"}},
		{"POST", u + "/sessions/s0/events", map[string]any{"author": "alice"}},
		{"PATCH", u + "/state", map[string]any{"state": map[string]any{"user:x": 1}}},
		{"PUT", u + "/sessions/s0/artifacts/x.txt", "content"},
		{"POST", u + "/facts", map[string]any{"key": "k", "value": "v"}},
		{"POST", u + "/import", "not read"},
		{"DELETE", u + "/sessions/s1", nil},
		{"POST", "/memories/add", map[string]any{"user_id": "alice", "app_id": "a", "user_key": adminKey, "session_id": "chat:1",
			"messages": []map[string]any{{"role": "user", "content": "hi", "timestamp": 1}}}},
	}
	for _, server := range []*Server{s, replica} {
		for _, wr := range writes {
			w := do(t, server, wr.method, wr.path, adminKey, wr.body)
			if w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "erasure_in_progress") {
				t.Errorf("%s %s during the erasure: %d %s", wr.method, wr.path, w.Code, w.Body)
			}
		}
		if w := do(t, server, "POST", "/v1/apps/a/users/bob/sessions", adminKey, map[string]any{}); w.Code != 201 {
			t.Errorf("bob's write during alice's erasure: %d %s", w.Code, w.Body)
		}
	}
	close(gated.gate)
	s.svcs.Erasures.Wait()
	r := decodeBody[erase.Receipt](t, do(t, s, "GET", u+"/erasure", adminKey, nil))
	if r.State != erase.StateDone || !r.Verified || r.Stores[0].Removed != 3 {
		t.Errorf("the receipt after the erasure: %+v", r)
	}
	// The other replica lets her writes go once its watch sees it done.
	for deadline := time.Now().Add(10 * erase.WatchEvery); ; time.Sleep(10 * time.Millisecond) {
		w := do(t, replica, "POST", u+"/sessions", adminKey, map[string]any{})
		if w.Code == 201 {
			break
		}
		if w.Code != 409 || time.Now().After(deadline) {
			t.Fatalf("a write after the erasure: %d %s", w.Code, w.Body)
		}
	}
}

// An erasure under load ends verified: writers hammering the user get 409
// from the moment it starts, and what was under way is removed.
func TestAnErasureUnderLoadEndsVerified(t *testing.T) {
	s := serverOn(t, "sqlite", freshDSN(t, "sqlite"), nil)
	u := "/v1/apps/a/users/alice"
	do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": "s"})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var accepted, held atomic.Int32
	for i := range 4 {
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				switch w := do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": fmt.Sprintf("w%d-%d", i, j)}); w.Code {
				case 201:
					accepted.Add(1)
				case 409:
					held.Add(1)
					time.Sleep(time.Millisecond) // as a client heeding Retry-After would, if more briefly
				default:
					t.Errorf("a write during the erasure: %d %s", w.Code, w.Body)
					return
				}
			}
		})
	}
	for accepted.Load() < 20 { // the writers are under way
		time.Sleep(time.Millisecond)
	}
	w := do(t, s, "DELETE", u, adminKey, nil)
	close(stop)
	wg.Wait()
	r := decodeBody[erase.Receipt](t, w)
	if w.Code != 200 || !r.Verified {
		t.Errorf("the erasure under load: %d %+v", w.Code, r)
	}
	t.Logf("%d writes accepted, %d held; receipt %+v", accepted.Load(), held.Load(), r.Stores)
}

func decodeBody[T any](t *testing.T, w interface{ Result() *http.Response }) T {
	t.Helper()
	var v T
	if err := json.NewDecoder(w.Result().Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The earliest instant is an instant like any other before the first
// version: as_of=0001-01-01 finds nothing, on every route that takes it.
func TestAsOfTheEarliestInstantFindsNothing(t *testing.T) {
	s := newTestServer(t, nil)
	u := "/v1/apps/a/users/alice"
	if w := do(t, s, "POST", u+"/facts", adminKey, map[string]any{"key": "home", "value": "Lives in Porto"}); w.Code != 201 {
		t.Fatalf("store: %d %s", w.Code, w.Body)
	}
	for _, earliest := range []string{"0001-01-01", "0001-01-01T00:00:00Z", "1970-01-01"} {
		if w := do(t, s, "GET", u+"/facts/home?as_of="+earliest, adminKey, nil); w.Code != 404 {
			t.Errorf("recall as of %s: %d %s", earliest, w.Code, w.Body)
		}
		if w := do(t, s, "GET", u+"/facts?as_of="+earliest, adminKey, nil); strings.Contains(w.Body.String(), "Porto") {
			t.Errorf("list as of %s: %s", earliest, w.Body)
		}
		if w := do(t, s, "POST", u+"/memory:search", adminKey, map[string]any{"query": "Porto", "as_of": earliest}); w.Code != 200 || strings.Contains(w.Body.String(), "Porto") {
			t.Errorf("search as of %s: %d %s", earliest, w.Code, w.Body)
		}
	}
	if w := do(t, s, "POST", u+"/memory:search", adminKey, map[string]any{"query": "Porto"}); !strings.Contains(w.Body.String(), "Lives in Porto") {
		t.Errorf("search now: %s", w.Body)
	}
}

// An erasure a stop left running that cannot be finished never keeps the
// server from serving: /readyz names it, an admin's console says so, and
// it is tried again until it is finished.
func TestAnErasureThatCannotBeFinishedIsReported(t *testing.T) {
	s := newTestServer(t, nil)
	s.svcs.Receipts.Put(t.Context(), &erase.Receipt{AppName: "a", UserID: "alice", State: erase.StateRunning})
	fail := atomic.Bool{}
	fail.Store(true)
	s.svcs.Erasures = erase.NewRunner(s.svcs.Receipts, func(ctx context.Context, app, user, by string, from *erase.Receipt) (*erase.Receipt, error) {
		if fail.Load() {
			return nil, errors.New("the index store does not answer")
		}
		from.State = erase.StateDone
		return from, s.svcs.Receipts.Put(ctx, from)
	}, quiet)
	if err := s.svcs.Erasures.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	for s.svcs.Erasures.Failing() == nil { // the first attempt fails at once
		time.Sleep(time.Millisecond)
	}
	w := do(t, s, "GET", "/readyz", "", nil)
	if w.Code != 503 || !strings.Contains(w.Body.String(), `"erasures"`) || strings.Contains(w.Body.String(), "index store") {
		t.Errorf("readyz with an erasure failing: %d %s", w.Code, w.Body)
	}
	req := httptest.NewRequest("GET", "/ui/", nil)
	req.Host = "127.0.0.1:8080"
	req.AddCookie(&http.Cookie{Name: "hector_console", Value: adminKey})
	page := httptest.NewRecorder()
	s.ServeHTTP(page, req)
	if !strings.Contains(page.Body.String(), "Not ready: erasures") {
		t.Errorf("the admin's console does not say so: %d %s", page.Code, page.Body)
	}
	fail.Store(false)
	for s.svcs.Erasures.Failing() != nil { // retried after a second
		time.Sleep(10 * time.Millisecond)
	}
	if w := do(t, s, "GET", "/readyz", "", nil); w.Code != 200 {
		t.Errorf("readyz once it is finished: %d %s", w.Code, w.Body)
	}
}

// A newcomer's first mistakes are answered with directions: a browser at
// / is led to the console, an append to a session not yet made says to
// make it, and an event in the wrong shape shows the right one.
func TestANewcomersMistakesGetDirections(t *testing.T) {
	s := newTestServer(t, nil)
	w := send(s, "GET", "/", "", "", func(r *http.Request) { r.Header.Set("Accept", "text/html,application/xhtml+xml") })
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/ui/" {
		t.Errorf("a browser at /: %d %v", w.Code, w.Header())
	}
	if w := send(s, "GET", "/", "", ""); w.Code != 404 || !strings.Contains(w.Body.String(), "/ui/") || !strings.Contains(w.Body.String(), "/openapi.json") {
		t.Errorf("a client at /: %d %s", w.Code, w.Body)
	}
	u := "/v1/apps/a/users/alice/sessions"
	if w := do(t, s, "POST", u+"/nope/events", aliceKey, map[string]any{"author": "alice"}); w.Code != 404 || !strings.Contains(w.Body.String(), "create it first") {
		t.Errorf("an append to a session not made: %d %s", w.Code, w.Body)
	}
	do(t, s, "POST", u, aliceKey, map[string]any{"session_id": "s"})
	if w := do(t, s, "POST", u+"/s/events", aliceKey, map[string]any{"text": "hi"}); w.Code != 400 || !strings.Contains(w.Body.String(), `\"parts\": [{\"type\": \"text\"`) {
		t.Errorf("an event in the wrong shape: %d %s", w.Code, w.Body)
	}
}
