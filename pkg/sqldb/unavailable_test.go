package sqldb

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Errors of a database that cannot serve now are told from errors of the
// request, with errors SQLite really returns: a full disk (here a page
// limit, which fails the same way) is unavailable; a broken constraint or
// a syntax error is not.
func TestUnavailable(t *testing.T) {
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer Close(db)
	sqlDB, _ := db.DB()
	conn, err := sqlDB.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "CREATE TABLE t (k TEXT PRIMARY KEY, v BLOB)"); err != nil {
		t.Fatal(err)
	}
	conn.ExecContext(t.Context(), "INSERT INTO t VALUES ('a', 'x')")
	_, dup := conn.ExecContext(t.Context(), "INSERT INTO t VALUES ('a', 'y')")
	_, syntax := conn.ExecContext(t.Context(), "INSERT INTO nowhere VALUES (1)")
	var pages int
	conn.QueryRowContext(t.Context(), "PRAGMA page_count").Scan(&pages)
	conn.ExecContext(t.Context(), fmt.Sprintf("PRAGMA max_page_count = %d", pages))
	_, full := conn.ExecContext(t.Context(), "INSERT INTO t VALUES ('b', zeroblob(1000000))")
	if full == nil || !strings.Contains(full.Error(), "full") {
		t.Fatalf("filling the database: %v, want SQLite's 'database or disk is full'", full)
	}
	for _, c := range []struct {
		what string
		err  error
		want bool
	}{
		{"a full database", full, true},
		{"a full database, wrapped", fmt.Errorf("session: %w", full), true},
		{"a duplicate key", dup, false},
		{"a missing table", syntax, false},
		{"no error", nil, false},
		{"another error", errors.New("bad input"), false},
	} {
		if got := Unavailable(c.err); got != c.want {
			t.Errorf("%s (%v): Unavailable = %v, want %v", c.what, c.err, got, c.want)
		}
	}
}
