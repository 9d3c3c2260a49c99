package sqldb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenSQLiteRejectsNonFilePaths(t *testing.T) {
	for _, path := range []string{"", ":memory:", "db?mode=memory", "a#b"} {
		if _, err := OpenSQLite(path); err == nil || !strings.Contains(err.Error(), "give a file") {
			t.Errorf("OpenSQLite(%q): error %v, want one that says to give a file", path, err)
		}
	}
}

func TestOpenSQLiteSetsPragmas(t *testing.T) {
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "nested", "dir", "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer Close(db)
	for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "busy_timeout": "10000"} {
		var got string
		if err := db.Raw("PRAGMA " + pragma).Scan(&got).Error; err != nil || got != want {
			t.Errorf("PRAGMA %s = %q (%v), want %q", pragma, got, err, want)
		}
	}
}

func TestOpenSQLiteRejectsAFileThatIsNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := writeFile(path, "these are not the pages you are looking for, padded to be long enough to matter....."); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSQLite(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("OpenSQLite of a text file: error %v, want one naming the file", err)
	}
}

func TestPostgresErrorsHideThePassword(t *testing.T) {
	dir := t.TempDir() // no server listens here
	for _, dsn := range []string{
		"postgres://hector:s3cret-pw@/db?host=" + dir,
		"host=" + dir + " user=hector password=s3cret-pw dbname=db",
		"host=" + dir + " user=hector password='s3cret-pw' dbname=db",
		"postgres://hector:s3cret-pw@localhost:notaport/db", // a parse error
	} {
		_, err := OpenPostgres(dsn)
		if err == nil {
			t.Fatalf("OpenPostgres(%q) connected to nothing", dsn)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

func TestRedact(t *testing.T) {
	got := redact(`failed: password=hunter2 and 'hunter2' and url postgres://u:hunter2@h/db`, "postgres://u:hunter2@h/db")
	if strings.Contains(got, "hunter2") {
		t.Errorf("redact left the password in: %s", got)
	}
}

func TestOpenUnknownDriver(t *testing.T) {
	if _, err := Open("oracle", "x"); err == nil || !strings.Contains(err.Error(), `"sqlite"`) || !strings.Contains(err.Error(), `"mysql"`) {
		t.Errorf("Open(oracle): error %v, want one listing the drivers", err)
	}
}

// A MySQL DSN that cannot be read is refused without echoing its password.
func TestOpenMySQLBadDSN(t *testing.T) {
	_, err := OpenMySQL("hector:hunter2@tcp(db:3306)")
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "user:password@tcp(host:3306)/database") {
		t.Errorf("OpenMySQL with a bad DSN: %v", err)
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
