package session_test

import (
	"testing"

	"github.com/hectormem/hector/internal/testdb"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/session/sessiontest"
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
