// Package sqldb opens the GORM databases Hector stores its data in: SQLite,
// the embedded default, and PostgreSQL or MySQL (MariaDB) for production.
package sqldb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	_ "github.com/hectormem/hector/internal/fewarenas" // SQLite's C heap kept in two arenas
	"github.com/hectormem/hector/internal/writelock"
)

// Drivers accepted by Open.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
	DriverMySQL    = "mysql"
)

// DefaultMaxConnections bounds the connections one process opens to a
// PostgreSQL or MySQL server: a few replicas stay within PostgreSQL's
// default max_connections of 100. SQLite has no server to spare and opens
// what its concurrent readers need.
const DefaultMaxConnections = 20

// SetMaxConnections makes db's pool open at most max connections (0: no
// bound) and keep them while they are used. database/sql keeps two idle
// connections unless told otherwise, so a burst of more concurrent requests
// closed connections and opened new ones: on PostgreSQL a backend forked
// and every statement prepared again, costing more CPU than the requests
// themselves.
func SetMaxConnections(db *gorm.DB, max int) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	idle := max
	if max == 0 {
		idle = 64
	}
	sqlDB.SetMaxOpenConns(max)
	sqlDB.SetMaxIdleConns(idle)
	// An idle process gives its connections back after a while.
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	return nil
}

// Open opens a database by driver name: "sqlite" takes a file path,
// "postgres" a DSN ("postgres://user@host:5432/db" or "host=… dbname=…").
func Open(driver, dsn string) (*gorm.DB, error) {
	switch driver {
	case DriverSQLite:
		return OpenSQLite(dsn)
	case DriverPostgres:
		return OpenPostgres(dsn)
	case DriverMySQL:
		return OpenMySQL(dsn)
	default:
		return nil, fmt.Errorf("sqldb: unknown database driver %q: use %q, %q or %q", driver, DriverSQLite, DriverPostgres, DriverMySQL)
	}
}

// OpenSQLite opens (creating if needed) the SQLite database file at path, in
// WAL mode with full fsync on commit, a busy timeout for other processes
// that write to it, and foreign keys enforced.
func OpenSQLite(path string) (*gorm.DB, error) {
	if path == "" || path == ":memory:" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqldb: SQLite path %q is not a file path: give a file such as ./data/hector.db", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("sqldb: creating the directory for %s: %w", path, err)
	}
	// synchronous=FULL: an acknowledged commit survives power loss, not just a crash.
	// secure_delete: a deleted row is overwritten, not left in a free page
	// where a copy of the file would still hold it (see Scrub).
	dsn := "file:" + path + "?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=10000&_foreign_keys=on&_secure_delete=on"
	db, err := gorm.Open(sqlite.Open(dsn), config())
	if err != nil {
		return nil, fmt.Errorf("sqldb: opening SQLite database %s: %w", path, err)
	}
	// Check now, not at the first write, that the file is a usable database.
	var mode string
	if err := db.Raw("PRAGMA journal_mode").Scan(&mode).Error; err != nil {
		return nil, fmt.Errorf("sqldb: SQLite database %s cannot be read: %w", path, err)
	}
	if mode != "wal" {
		return nil, fmt.Errorf("sqldb: SQLite database %s did not switch to WAL mode (it is %q)", path, mode)
	}
	return db, SetMaxConnections(db, 0)
}

// Scrub writes what was deleted out of a SQLite database's files: deleted
// rows are already overwritten in their pages (secure_delete), and the
// write-ahead log, which still holds the pages as they were, is
// checkpointed and truncated. It waits (up to the busy timeout) for
// readers to move off the log. Other engines keep dead rows until their
// own vacuum; for them it does nothing.
func Scrub(ctx context.Context, db *gorm.DB) error {
	if db.Dialector.Name() != "sqlite" {
		return nil
	}
	var busy, logged, checkpointed int
	if err := db.WithContext(ctx).Raw("PRAGMA wal_checkpoint(TRUNCATE)").Row().Scan(&busy, &logged, &checkpointed); err != nil {
		return fmt.Errorf("sqldb: checkpointing the SQLite log: %w", err)
	}
	if busy != 0 {
		return errors.New("sqldb: the SQLite log could not be truncated: a reader held it past the busy timeout")
	}
	return nil
}

// OpenPostgres connects to PostgreSQL and checks the connection.
func OpenPostgres(dsn string) (*gorm.DB, error) {
	db, err := gorm.Open(postgres.Open(dsn), config())
	if err != nil {
		// pgx errors can quote the DSN, password included: never pass them on.
		return nil, fmt.Errorf("sqldb: cannot connect to PostgreSQL (check the DSN's host, port, user, password and database): %s", redact(err.Error(), dsn))
	}
	return db, SetMaxConnections(db, DefaultMaxConnections)
}

// OpenMySQL connects to MySQL or MariaDB ("user:pw@tcp(host:3306)/db" or
// "user@unix(/path/mysql.sock)/db") and checks the connection. Hector sets
// what its tables need: times parsed, in UTC, utf8mb4 text, and the
// standard's quoting and strictness.
func OpenMySQL(dsn string) (*gorm.DB, error) {
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqldb: the MySQL DSN is not valid (user:password@tcp(host:3306)/database): %s", redact(err.Error(), dsn))
	}
	cfg.ParseTime, cfg.Loc = true, time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["charset"] = "utf8mb4"
	cfg.Params["sql_mode"] = "'ANSI_QUOTES,NO_BACKSLASH_ESCAPES,STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO'"
	db, err := gorm.Open(mysql.New(mysql.Config{DSNConfig: cfg}), config())
	if err != nil {
		return nil, fmt.Errorf("sqldb: cannot connect to MySQL (check the DSN's host, port, user, password and database): %s", redact(err.Error(), dsn))
	}
	// IDs compare as bytes, as on the other databases: "Alice" is not
	// "alice", and "a " is not "a". MariaDB and MySQL name that collation
	// differently.
	var version string
	if err := db.Raw("SELECT VERSION()").Scan(&version).Error; err != nil {
		return nil, fmt.Errorf("sqldb: MySQL: %s", redact(err.Error(), dsn))
	}
	collation := "utf8mb4_0900_bin"
	if strings.Contains(version, "MariaDB") {
		collation = "utf8mb4_nopad_bin"
	}
	if err := SetMaxConnections(db, DefaultMaxConnections); err != nil {
		return nil, err
	}
	// Session: every call on the returned handle starts from these settings.
	return db.Set("gorm:table_options", "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE="+collation).Session(&gorm.Session{}), nil
}

func config() *gorm.Config {
	return &gorm.Config{
		// Errors are returned to callers; GORM's own logger would print SQL with its arguments.
		Logger:                 logger.Discard,
		PrepareStmt:            true,
		SkipDefaultTransaction: true,
	}
}

// Close closes the database's connections.
func Close(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	writelock.Forget(sqlDB)
	return sqlDB.Close()
}

// ByteOrder is column as ORDER BY and comparisons should name it so that
// text sorts by its UTF-8 bytes, as Go compares strings, on every
// database: SQLite's and Hector's MySQL tables compare bytes already;
// PostgreSQL compares by its database's locale unless told "C". Lists
// that merge rows of several stores need the one order.
func ByteOrder(db *gorm.DB, column string) string {
	if db.Dialector.Name() == "postgres" {
		return column + ` COLLATE "C"`
	}
	return column
}
