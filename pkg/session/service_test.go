package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/session/sessiontest"
	"github.com/hectormem/hector/pkg/sqldb"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
	"gorm.io/gorm"
)

func TestInMemory(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service { return session.NewInMemoryService(opts...) })
}

func TestSQLite(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return newSQL(t, sqldbtest.SQLite(t), opts...)
	})
}

func TestPostgres(t *testing.T) {
	sqldbtest.Postgres(t) // skips the whole suite, once, when there is no server
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return newSQL(t, sqldbtest.Postgres(t), opts...)
	})
}

func newSQL(t testing.TB, db *gorm.DB, opts ...session.Option) *session.SQLService {
	t.Helper()
	svc, err := session.NewSQLService(db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func TestMySQL(t *testing.T) {
	sqldbtest.MySQL(t) // skips the whole suite, once, when there is no server
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return newSQL(t, sqldbtest.MySQL(t), opts...)
	})
}

// TestFewConnectionsManyWriters runs more concurrent writes and reads than
// the pool has connections, each write the first use of its statements: a
// write must never wait for a second connection while it holds one, and on
// SQLite, whose writes hold a connection of their own, reads go on beside.
func TestFewConnectionsManyWriters(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{"sqlite": sqldbtest.SQLite, "postgres": sqldbtest.Postgres, "mysql": sqldbtest.MySQL} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			if err := sqldb.SetMaxConnections(db, 2); err != nil {
				t.Fatal(err)
			}
			svc := newSQL(t, db)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errs := make(chan error, 32)
			for i := range 32 {
				wg.Go(func() {
					id := fmt.Sprintf("s%d", i)
					if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: id}); err != nil {
						errs <- err
						return
					}
					// Each writer's delta touches another mix of scopes, so other statements.
					delta := map[string]any{[]string{"app:", "user:", ""}[i%3] + id: i}
					if err := svc.AppendEvent(ctx, session.Ref("app", "u", id), &session.Event{Author: "a", Actions: session.Actions{StateDelta: delta}}); err != nil {
						errs <- err
						return
					}
					got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: id})
					if err == nil && got.Session.Events().Len() != 1 {
						err = fmt.Errorf("%s has %d events, want 1", id, got.Session.Events().Len())
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestSQLiteWriteConnection covers the connection SQLite writes hold: a pool
// without room for it beside the readers is refused, and after Close writes
// fail and another service finds what was written.
func TestSQLiteWriteConnection(t *testing.T) {
	t.Run("one-connection pool", func(t *testing.T) {
		db := sqldbtest.SQLite(t)
		if err := sqldb.SetMaxConnections(db, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := session.NewSQLService(db); err == nil || !strings.Contains(err.Error(), "allow two or more") {
			t.Fatalf("NewSQLService on a pool of one connection: %v, want an error saying to allow two or more", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		db := sqldbtest.SQLite(t)
		svc := newSQL(t, db)
		ctx := t.Context()
		created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := svc.AppendEvent(ctx, created.Session, &session.Event{Author: "a"}); !errors.Is(err, session.ErrClosed) {
			t.Fatalf("append after Close: %v, want ErrClosed", err)
		}
		got, err := newSQL(t, db).Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil || got.Session.Events().Len() != 0 {
			t.Fatalf("Get from another service: %v, %v; want the session, with no event", got, err)
		}
		if err := svc.Close(); err != nil {
			t.Fatalf("closing twice: %v", err)
		}
	})
}

// SQLite's reads run to their end once begun (see SQLService.read), so a
// read asked with a cancelled context must be refused before it begins,
// and the same read with a live one answers.
func TestACancelledSQLiteReadIsRefused(t *testing.T) {
	svc := newSQL(t, sqldbtest.SQLite(t))
	ctx := t.Context()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	get := &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"}
	list := &session.ListRequest{AppName: "app", UserID: "u"}
	if _, err := svc.Get(cancelled, get); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v; want context.Canceled", err)
	}
	if _, err := svc.List(cancelled, list); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context: %v; want context.Canceled", err)
	}
	if _, err := svc.Get(ctx, get); err != nil {
		t.Errorf("Get: %v", err)
	}
	if resp, err := svc.List(ctx, list); err != nil || len(resp.Sessions) != 1 {
		t.Errorf("List: %v; want the session", err)
	}
}
