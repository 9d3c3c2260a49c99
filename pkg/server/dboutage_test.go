package server

import (
	"encoding/json"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// pgProxy stands between Hector and the test's PostgreSQL server, so that
// a test can take the server away (connections refused, open ones cut) and
// bring it back.
type pgProxy struct {
	addr, target, network string
	mu                    sync.Mutex
	lis                   net.Listener
	conns                 []net.Conn
}

// proxyPostgres returns a DSN that reaches dsn's server through a proxy.
func proxyPostgres(t *testing.T, dsn string) (*pgProxy, string) {
	fields := map[string]string{}
	var rest []string
	for _, f := range strings.Fields(dsn) {
		k, v, _ := strings.Cut(f, "=")
		if k == "host" || k == "port" {
			fields[k] = v
			continue
		}
		rest = append(rest, f)
	}
	if fields["host"] == "" {
		t.Skip("n/a: the outage test needs a DSN of key=value pairs with a host")
	}
	p := &pgProxy{network: "tcp", target: net.JoinHostPort(fields["host"], cmpOr(fields["port"], "5432"))}
	if strings.HasPrefix(fields["host"], "/") {
		p.network, p.target = "unix", fields["host"]+"/.s.PGSQL."+cmpOr(fields["port"], "5432")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = lis.Addr().String()
	p.serve(lis)
	t.Cleanup(p.cut)
	host, port, _ := net.SplitHostPort(p.addr)
	return p, strings.Join(append(rest, "host="+host, "port="+port), " ")
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (p *pgProxy) serve(lis net.Listener) {
	p.mu.Lock()
	p.lis = lis
	p.mu.Unlock()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial(p.network, p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut refuses new connections and breaks the open ones, as a server that
// went down does.
func (p *pgProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lis.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *pgProxy) restore(t *testing.T) {
	lis, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(lis)
}

// While the database is down, every request that needs it answers 503
// with Retry-After (a client can tell it may retry), /readyz names the
// database, and nothing of the outage's details reaches the client; once
// it is back, requests succeed again.
func TestDatabaseOutageAnswers503(t *testing.T) {
	proxy, dsn := proxyPostgres(t, sqldbtest.PostgresDSN(t))
	s := serverOn(t, "postgres", dsn, nil)
	u := "/v1/apps/a/users/alice"
	if w := do(t, s, "POST", u+"/sessions", adminKey, map[string]any{"session_id": "s"}); w.Code != 201 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	event := map[string]any{"author": "user", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "hello"}}}}

	proxy.cut()
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"POST", u + "/sessions/s/events", event},
		{"GET", u + "/sessions/s", nil},
		{"POST", u + "/facts", map[string]any{"key": "k", "value": "v"}},
		{"GET", u + "/sessions", nil},
	} {
		w := do(t, s, r.method, r.path, adminKey, r.body)
		if w.Code != 503 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"unavailable"`) {
			t.Errorf("%s %s with the database down: %d %s (Retry-After %q), want 503 unavailable", r.method, r.path, w.Code, w.Body, w.Header().Get("Retry-After"))
		}
		if strings.Contains(w.Body.String(), proxy.addr) {
			t.Errorf("%s %s tells the database's address: %s", r.method, r.path, w.Body)
		}
	}
	w := do(t, s, "GET", "/readyz", "", nil)
	var ready struct {
		Unavailable []string `json:"unavailable"`
	}
	json.Unmarshal(w.Body.Bytes(), &ready)
	if w.Code != 503 || !slices.Equal(ready.Unavailable, []string{"databases.main"}) {
		t.Errorf("/readyz with the database down: %d %s, want 503 naming databases.main", w.Code, w.Body)
	}

	// Once it is back, a client that retries on 503, as Retry-After asks,
	// gets through: a pooled connection the outage broke can fail one
	// more request (whether it is broken shows only when it is used), so
	// the test waits on the append succeeding, not on a time.
	proxy.restore(t)
	for attempt := 1; ; attempt++ {
		w := do(t, s, "POST", u+"/sessions/s/events", adminKey, event)
		if w.Code == 201 {
			break
		}
		if w.Code != 503 || attempt == 20 {
			t.Fatalf("append once the database is back, try %d: %d %s", attempt, w.Code, w.Body)
		}
	}
	if w := do(t, s, "GET", "/readyz", "", nil); w.Code != 200 {
		t.Errorf("/readyz once the database is back: %d %s", w.Code, w.Body)
	}
	w = do(t, s, "GET", u+"/sessions/s", adminKey, nil)
	if n := strings.Count(w.Body.String(), `"seq":`); w.Code != 200 || n != 1 {
		t.Errorf("the session once the database is back: %d, %d events; want the one append that succeeded\n%s", w.Code, n, w.Body)
	}
}
