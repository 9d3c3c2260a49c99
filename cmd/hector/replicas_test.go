package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/index/weaviate"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// Two stateless replicas on one PostgreSQL and one Weaviate, each with an
// empty data directory of its own.
func TestReplicas(t *testing.T) {
	weaviateAddr := os.Getenv("HECTOR_TEST_WEAVIATE_ADDR")
	if weaviateAddr == "" {
		t.Skip("HECTOR_TEST_WEAVIATE_ADDR is not set: run scripts/test, which starts a Weaviate server")
	}
	dsn := sqldbtest.PostgresDSN(t)
	config := replicaConfig(t, dsn, weaviateAddr)
	one := startIn(t, t.TempDir(), replicaEnv, "--config", config("replica-one"), "--data-dir", t.TempDir())
	if !strings.Contains(one.banner, "in Weaviate at http://"+weaviateAddr) {
		t.Errorf("the start-up lines do not say where the index is:\n%s", one.banner)
	}
	two := startIn(t, t.TempDir(), replicaEnv, "--config", config("replica-two"), "--data-dir", t.TempDir())

	// An append acknowledged by one replica is found through the other at once.
	u := "/v1/apps/app/users/alice"
	one.call(t, "POST", u+"/sessions", map[string]any{"session_id": "s1"}, 201)
	for i := range 10 {
		word := fmt.Sprintf("quokka%d", i)
		one.call(t, "POST", u+"/sessions/s1/events", text("the "+word+" came by"), 201)
		res := two.call(t, "POST", u+"/memory:search", map[string]any{"query": word}, 200)
		if got := res["results"].([]any); len(got) == 0 || !strings.Contains(got[0].(map[string]any)["content"].(string), word) {
			t.Fatalf("right after the append of %q through one replica, the other finds %v", word, got)
		}
		// Each replica caches sessions: the other's read is never stale.
		events := two.call(t, "GET", u+"/sessions/s1?recent=2", nil, 200)["events"].([]any)
		if last := events[len(events)-1].(map[string]any); last["seq"] != float64(i+1) {
			t.Fatalf("right after append %d through one replica, the other's cached session ends at %v", i+1, last["seq"])
		}
	}
	// Another user sees none of it.
	if res := two.call(t, "POST", "/v1/apps/app/users/bob/memory:search", map[string]any{"query": "quokka0 quokka1 came"}, 200); len(res["results"].([]any)) != 0 {
		t.Fatalf("bob finds alice's events: %v", res)
	}
	// A session deleted through one replica is gone from the other's searches.
	two.call(t, "DELETE", u+"/sessions/s1", nil, 204)
	if res := one.call(t, "POST", u+"/memory:search", map[string]any{"query": "quokka3"}, 200); len(res["results"].([]any)) != 0 {
		t.Fatalf("a session deleted through one replica is still found through the other: %v", res)
	}

	// Events written behind the replicas' backs (another writer on the
	// database) reach the index through the replica that follows the feed.
	// Kill that one in the middle: the other takes over, and every event
	// is indexed exactly once.
	db, err := sqldb.OpenPostgres(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close(db)
	sessions, err := session.NewSQLService(db)
	if err != nil {
		t.Fatal(err)
	}
	defer sessions.Close()
	leader := func() string {
		var names []string
		db.Raw(`SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted`).Scan(&names)
		return strings.Join(names, ",")
	}
	waitFor(t, "a replica to lead the feed", func() bool { return leader() != "" })
	follower, other, otherName := one, two, "replica-two"
	if leader() == "replica-two" {
		follower, other, otherName = two, one, "replica-one"
	}
	created, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "carol", SessionID: "load"})
	if err != nil {
		t.Fatal(err)
	}
	const events = 200
	for i := range events {
		if i == events/2 {
			follower.cmd.Process.Signal(syscall.SIGKILL)
		}
		ev := &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, fmt.Sprintf("wombat note w%d", i))}
		if err := sessions.AppendEvent(t.Context(), created.Session, ev); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the other replica to take the lease and catch up", func() bool {
		return leader() == otherName && metric(t, other, "hector_index_lag_changes") == "0"
	})
	c := "/v1/apps/app/users/carol/memory:search"
	res := other.call(t, "POST", c, map[string]any{"query": "wombat note", "limit": 1000}, 200)
	seen := map[string]bool{}
	for _, r := range res["results"].([]any) {
		id := r.(map[string]any)["event_id"].(string)
		if seen[id] {
			t.Fatalf("event %s indexed twice", id)
		}
		seen[id] = true
	}
	if len(seen) != events {
		t.Fatalf("%d of %d events written during the failover are indexed", len(seen), events)
	}
	// Each is found by its own word. (Not necessarily first: Weaviate's
	// vector search is approximate, and a near miss it ranks first ties
	// with the keyword match under fusion.)
	for _, i := range []int{0, events/2 - 1, events / 2, events - 1} {
		res := other.call(t, "POST", c, map[string]any{"query": fmt.Sprintf("w%d", i)}, 200)
		found := slices.ContainsFunc(res["results"].([]any), func(r any) bool {
			return r.(map[string]any)["content"] == fmt.Sprintf("wombat note w%d", i)
		})
		if !found {
			t.Errorf("w%d: %v", i, res["results"])
		}
	}
}

// Replicas share the facts key, as they must.
var replicaEnv = []string{"HECTOR_FACTS_KEY=" + strings.Repeat("ab", 32)}

// replicaConfig returns a function writing the config of a replica on the
// database at dsn and a collection of its own in the Weaviate at addr
// (dropped when t ends). Each replica names its database connections, to
// tell which one holds the feed's lease.
func replicaConfig(t *testing.T, dsn, addr string) func(name string) string {
	collection := fmt.Sprintf("HectorReplicas%d_%d", os.Getpid(), time.Now().UnixNano())
	if store, err := weaviate.New(weaviate.Config{URL: "http://" + os.Getenv("HECTOR_TEST_WEAVIATE_ADDR"), Collection: collection}); err == nil {
		t.Cleanup(func() { store.Drop(context.Background()) })
	}
	return func(name string) string {
		path := filepath.Join(t.TempDir(), "hector.yaml")
		yaml := fmt.Sprintf(`server:
  sessions: {backend: sql, database: main, cache: 100}
  artifacts: {backend: sql, database: main}
  index:
    type: hybrid
    store: weaviate
    weaviate: {url: "http://%s", collection: %s}
databases:
  main: {driver: postgres, dsn: "%s application_name=%s"}
embedders:
  local: {type: hash, dimensions: 64}
`, addr, collection, dsn, name)
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// The index store unreachable at start-up and back later: serve starts and
// says it is not ready, appends succeed, the lag shows in /metrics, and the
// follower catches up when the store returns.
func TestIndexStoreOutage(t *testing.T) {
	weaviateAddr := os.Getenv("HECTOR_TEST_WEAVIATE_ADDR")
	if weaviateAddr == "" {
		t.Skip("HECTOR_TEST_WEAVIATE_ADDR is not set: run scripts/test, which starts a Weaviate server")
	}
	proxy := newSwitchProxy(t, weaviateAddr)
	config := replicaConfig(t, sqldbtest.PostgresDSN(t), proxy.addr())
	p := startIn(t, t.TempDir(), replicaEnv, "--config", config("outage"), "--data-dir", t.TempDir())
	p.call(t, "GET", "/readyz", nil, 503)
	if logs := p.logs.String(); !strings.Contains(logs, "weaviate at "+proxy.addr()) {
		t.Errorf("the log does not name the unreachable store and its address:\n%s", logs)
	}
	u := "/v1/apps/app/users/dana"
	p.call(t, "POST", u+"/sessions", map[string]any{"session_id": "s"}, 201)
	for i := range 5 {
		p.call(t, "POST", u+"/sessions/s/events", text(fmt.Sprintf("platypus%d sighting", i)), 201)
	}
	if lag := metric(t, p, "hector_index_lag_changes"); lag != "5" {
		t.Errorf("index lag while the store is down = %q, want 5", lag)
	}
	proxy.up(true)
	waitFor(t, "the index to catch up", func() bool { return metric(t, p, "hector_index_lag_changes") == "0" })
	p.call(t, "GET", "/readyz", nil, 200)
	res := p.call(t, "POST", u+"/memory:search", map[string]any{"query": "platypus3"}, 200)
	if got := res["results"].([]any); len(got) == 0 || got[0].(map[string]any)["content"] != "platypus3 sighting" {
		t.Errorf("after the store came back, platypus3 finds %v", got)
	}
}

// switchProxy forwards TCP connections to target while it is up, and
// refuses them while it is down (as it starts).
type switchProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	isUp   bool
	target string
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			up := p.isUp
			p.mu.Unlock()
			if !up {
				c.Close()
				continue
			}
			go p.forward(c)
		}
	}()
	return p
}

func (p *switchProxy) addr() string { return p.ln.Addr().String() }

func (p *switchProxy) up(on bool) {
	p.mu.Lock()
	p.isUp = on
	p.mu.Unlock()
}

func (p *switchProxy) forward(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	go io.Copy(s, c)
	io.Copy(c, s)
}

// waitFor polls cond until it holds, failing after 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metric reads one unlabelled metric from a server's /metrics.
func metric(t *testing.T, p *proc, name string) string {
	resp, err := http.Get(p.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), name+" "); ok {
			return v
		}
	}
	return ""
}
