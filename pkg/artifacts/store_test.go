package artifacts_test

import (
	"testing"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/artifacts/artifactstest"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

func TestInMemory(t *testing.T) {
	artifactstest.Run(t, func(t *testing.T, opts ...artifacts.Option) artifacts.Service {
		return artifacts.NewInMemoryService(opts...)
	})
}

func TestSQLite(t *testing.T) {
	artifactstest.Run(t, func(t *testing.T, opts ...artifacts.Option) artifacts.Service {
		s, err := artifacts.NewSQL(sqldbtest.SQLite(t), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestPostgres(t *testing.T) {
	sqldbtest.Postgres(t)
	artifactstest.Run(t, func(t *testing.T, opts ...artifacts.Option) artifacts.Service {
		s, err := artifacts.NewSQL(sqldbtest.Postgres(t), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestMySQL(t *testing.T) {
	sqldbtest.MySQL(t)
	artifactstest.Run(t, func(t *testing.T, opts ...artifacts.Option) artifacts.Service {
		s, err := artifacts.NewSQL(sqldbtest.MySQL(t), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestFilesystem(t *testing.T) {
	artifactstest.Run(t, func(t *testing.T, opts ...artifacts.Option) artifacts.Service {
		s, err := artifacts.NewFilesystem(t.TempDir(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
