// Package sqldbtest gives tests real databases: a SQLite file in a temp dir,
// or a fresh schema on the PostgreSQL server named by HECTOR_TEST_POSTGRES_DSN.
package sqldbtest

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/hectormem/hector/pkg/sqldb"
)

// PostgresEnv names the variable holding the test server's DSN.
const PostgresEnv = "HECTOR_TEST_POSTGRES_DSN"

// SQLite opens a new SQLite database file in t's temp dir.
func SQLite(t testing.TB) *gorm.DB {
	t.Helper()
	return SQLiteAt(t, filepath.Join(t.TempDir(), "hector.db"))
}

// SQLiteAt opens the SQLite database at path and closes it when t ends.
func SQLiteAt(t testing.TB, path string) *gorm.DB {
	t.Helper()
	db, err := sqldb.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqldb.Close(db) })
	return db
}

var schemas atomic.Int64

// Postgres returns a connection to a new, empty schema on the test server,
// dropped when t ends. It skips t when HECTOR_TEST_POSTGRES_DSN is unset.
func Postgres(t testing.TB) *gorm.DB {
	t.Helper()
	db, err := sqldb.OpenPostgres(PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqldb.Close(db) })
	return db
}

// PostgresDSN makes a new, empty schema on the test server, dropped when t
// ends, and returns a DSN whose connections use it: for a process under
// test. It skips t when HECTOR_TEST_POSTGRES_DSN is unset.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: no PostgreSQL server to test against (scripts/test starts one)", PostgresEnv)
	}
	admin, err := sqldb.OpenPostgres(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("t%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, schemas.Add(1))
	if err := admin.Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		sqldb.Close(admin)
	})
	return withSearchPath(dsn, schema)
}

func withSearchPath(dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " search_path=" + schema
}

// MySQLEnv names the variable holding the MySQL (MariaDB) test server's DSN.
const MySQLEnv = "HECTOR_TEST_MYSQL_DSN"

// MySQL returns a connection to a new, empty database on the MySQL test
// server, dropped when t ends. It skips t when HECTOR_TEST_MYSQL_DSN is unset.
func MySQL(t testing.TB) *gorm.DB {
	t.Helper()
	db, err := sqldb.OpenMySQL(MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqldb.Close(db) })
	return db
}

// MySQLDSN makes a new, empty database on the MySQL test server, dropped
// when t ends, and returns its DSN. It skips t when HECTOR_TEST_MYSQL_DSN
// is unset.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(MySQLEnv)
	if dsn == "" {
		t.Skipf("%s is not set: no MySQL server to test against (scripts/test starts a MariaDB one)", MySQLEnv)
	}
	admin, err := sqldb.OpenMySQL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("t%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, schemas.Add(1))
	if err := admin.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP DATABASE " + name)
		sqldb.Close(admin)
	})
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	return cfg.FormatDSN()
}
