package artifacts_test

import (
	"testing"

	"github.com/hectormem/hector/internal/testdb"
	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/artifacts/artifactstest"
)

func TestInMemory(t *testing.T) {
	artifactstest.Run(t, func(t *testing.T, opts ...artifacts.Option) artifacts.Service { return artifacts.NewInMemory(opts...) })
}

func TestSQLite(t *testing.T) {
	artifactstest.Run(t, func(t *testing.T, opts ...artifacts.Option) artifacts.Service {
		s, err := artifacts.NewSQL(testdb.SQLite(t), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestPostgres(t *testing.T) {
	testdb.Postgres(t)
	artifactstest.Run(t, func(t *testing.T, opts ...artifacts.Option) artifacts.Service {
		s, err := artifacts.NewSQL(testdb.Postgres(t), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestMySQL(t *testing.T) {
	testdb.MySQL(t)
	artifactstest.Run(t, func(t *testing.T, opts ...artifacts.Option) artifacts.Service {
		s, err := artifacts.NewSQL(testdb.MySQL(t), opts...)
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
