package session_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/internal/testdb"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/session/sessiontest"
	"github.com/hectormem/hector/pkg/sqldb"
	"gorm.io/gorm"
)

func TestInMemory(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service { return session.NewInMemoryService(opts...) })
}

func TestSQLite(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return newSQL(t, testdb.SQLite(t), opts...)
	})
}

func TestPostgres(t *testing.T) {
	testdb.Postgres(t) // skips the whole suite, once, when there is no server
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return newSQL(t, testdb.Postgres(t), opts...)
	})
}

func newSQL(t testing.TB, db *gorm.DB, opts ...session.Option) *session.SQLService {
	t.Helper()
	svc, err := session.NewSQLService(db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func TestMySQL(t *testing.T) {
	testdb.MySQL(t) // skips the whole suite, once, when there is no server
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return newSQL(t, testdb.MySQL(t), opts...)
	})
}

// TestFewConnectionsManyWriters runs more concurrent writes than the pool has
// connections, each the first use of its statements: a write must never wait
// for a second connection while it holds one.
func TestFewConnectionsManyWriters(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{"postgres": testdb.Postgres, "mysql": testdb.MySQL} {
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
					errs <- svc.AppendEvent(ctx, session.Ref("app", "u", id), &session.Event{Author: "a", Actions: session.Actions{StateDelta: delta}})
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
