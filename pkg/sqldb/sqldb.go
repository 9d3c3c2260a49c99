// Package sqldb opens the GORM databases Hector stores its data in: SQLite,
// the embedded default, and PostgreSQL for production.
package sqldb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Drivers accepted by Open.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// Open opens a database by driver name: "sqlite" takes a file path,
// "postgres" a DSN ("postgres://user@host:5432/db" or "host=… dbname=…").
func Open(driver, dsn string) (*gorm.DB, error) {
	switch driver {
	case DriverSQLite:
		return OpenSQLite(dsn)
	case DriverPostgres:
		return OpenPostgres(dsn)
	default:
		return nil, fmt.Errorf("sqldb: unknown database driver %q: use %q or %q", driver, DriverSQLite, DriverPostgres)
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
	dsn := "file:" + path + "?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=10000&_foreign_keys=on"
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
	return db, nil
}

// OpenPostgres connects to PostgreSQL and checks the connection.
func OpenPostgres(dsn string) (*gorm.DB, error) {
	db, err := gorm.Open(postgres.Open(dsn), config())
	if err != nil {
		// pgx errors can quote the DSN, password included: never pass them on.
		return nil, fmt.Errorf("sqldb: cannot connect to PostgreSQL (check the DSN's host, port, user, password and database): %s", redact(err.Error(), dsn))
	}
	return db, nil
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
	return sqlDB.Close()
}
