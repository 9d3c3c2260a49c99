package session_test

import (
	"fmt"
	"testing"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/session/sessiontest"
	"github.com/hectormem/hector/pkg/sqldb"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

func TestCachedInMemory(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return session.NewCached(session.NewInMemoryService(opts...), 8)
	})
}

func TestCachedSQLite(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return session.NewCached(newSQL(t, sqldbtest.SQLite(t), opts...), 8)
	})
}

func TestCachedPostgres(t *testing.T) {
	sqldbtest.Postgres(t)
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return session.NewCached(newSQL(t, sqldbtest.Postgres(t), opts...), 8)
	})
}

// Two processes on one database, each with its own cache: what one appends
// or deletes, the other's next Get shows.
func TestCachedAcrossProcesses(t *testing.T) {
	path := t.TempDir() + "/shared.db"
	open := func() *session.Cached {
		db, err := sqldb.OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sqldb.Close(db) })
		return session.NewCached(newSQL(t, db), 16)
	}
	a, b := open(), open()
	ctx := t.Context()
	resp, err := a.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	say := func(svc session.Service, s session.Session, text string) {
		t.Helper()
		if err := svc.AppendEvent(ctx, s, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		say(a, resp.Session, fmt.Sprint("from a ", i))
	}
	texts := func(svc session.Service, n int) []string {
		t.Helper()
		got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s", NumRecentEvents: n})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for ev := range got.Session.Events().All() {
			out = append(out, ev.Message.Text())
		}
		return out
	}
	texts(a, 3) // now cached in a
	fromB, err := b.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	say(b, fromB.Session, "from b")
	if got := texts(a, 2); fmt.Sprint(got) != "[from a 4 from b]" {
		t.Errorf("a after b appended: %q", got)
	}
	// Deleted and made again with as many events: still not the cached one.
	if err := b.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"}); err == nil {
		t.Error("a still serves a session b deleted")
	}
	again, _ := b.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	for i := range 6 {
		say(b, again.Session, fmt.Sprint("new ", i))
	}
	if got := texts(a, 1); fmt.Sprint(got) != "[new 5]" {
		t.Errorf("a after b re-made the session: %q", got)
	}
}
