package pagesum_test

import (
	"database/sql"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/hectormem/hector/internal/pagesum"
)

const pageSize = 4096

var registerDriver sync.Once

// open opens path with the VFS, its pages keeping sums when it is new.
func open(t *testing.T, path string) *sql.DB {
	t.Helper()
	if err := pagesum.Register(); err != nil {
		t.Fatal(err)
	}
	registerDriver.Do(func() {
		sql.Register("sqlite3-pagesum-test", &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			if err := c.SetFileControlInt("main", pagesum.FcntlReserveBytes, pagesum.ReserveBytes); err != nil {
				return err
			}
			_, err := c.Exec(`PRAGMA page_size = 4096; PRAGMA journal_mode = WAL`, nil)
			return err
		}})
	})
	db, err := sql.Open("sqlite3-pagesum-test", "file:"+path+"?vfs="+pagesum.VFS)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// fill writes rows enough for several pages, and closes the file.
func fill(t *testing.T, path string) {
	db := open(t, path)
	if _, err := db.Exec(`CREATE TABLE t(id INTEGER PRIMARY KEY, text TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		if _, err := db.Exec(`INSERT INTO t(text) VALUES(?)`, strings.Repeat("turn ", 40)+string(rune('a'+i%26))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil { // the last connection checkpoints: every page is in the file
		t.Fatal(err)
	}
}

func count(db *sql.DB) (n int, err error) {
	err = db.QueryRow(`SELECT count(*) FROM t WHERE length(text) > 0`).Scan(&n)
	return n, err
}

// Every page of a new file keeps a sum that matches it, and the file
// reads back whole.
func TestEveryPageKeepsItsSum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	fill(t, path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if raw[20] != pagesum.ReserveBytes {
		t.Fatalf("the header reserves %d bytes a page, want %d", raw[20], pagesum.ReserveBytes)
	}
	if len(raw)%pageSize != 0 || len(raw)/pageSize < 10 {
		t.Fatalf("file of %d bytes: want several pages of %d", len(raw), pageSize)
	}
	for p := 0; p < len(raw)/pageSize; p++ {
		page := raw[p*pageSize : (p+1)*pageSize]
		if got, want := binary.LittleEndian.Uint64(page[pageSize-8:]), pagesum.Sum(page); got != want {
			t.Errorf("page %d keeps sum %x, its content sums to %x", p+1, got, want)
		}
	}
	if n, err := count(open(t, path)); err != nil || n != 400 {
		t.Errorf("reading back: %d rows, %v", n, err)
	}
}

// A byte changed anywhere in any page is an error when the page is read,
// never a row served wrong or left out.
func TestADamagedPageIsAnError(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.db")
	fill(t, clean)
	raw, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	pages := len(raw) / pageSize
	for p := range pages {
		for _, at := range []int{0, 101, pageSize / 2, pageSize - 9, pageSize - 1} {
			if p == 0 && at < 100 {
				continue // the file's header: SQLite's own checks refuse it, or it is no database
			}
			damaged := append([]byte(nil), raw...)
			damaged[p*pageSize+at] ^= 0x5a
			path := filepath.Join(dir, "damaged.db")
			os.Remove(path + "-wal")
			os.Remove(path + "-shm")
			if err := os.WriteFile(path, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			db := open(t, path)
			// A full scan reads every page of the table; the schema's page is read at open.
			n, err := count(db)
			if err == nil || !pagesum.Damaged(err) {
				t.Errorf("page %d, byte %d changed: %d rows, %v; want the checksum's error", p+1, at, n, err)
			}
			db.Close()
		}
	}
}

// A file made without the reserve keeps no sums and reads as before.
func TestAFileWithoutTheReserveIsReadAsItIs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain.db")
	plain, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Exec(`CREATE TABLE t(id INTEGER PRIMARY KEY, text TEXT NOT NULL); INSERT INTO t(text) VALUES('one')`); err != nil {
		t.Fatal(err)
	}
	plain.Close()
	if n, err := count(open(t, path)); err != nil || n != 1 {
		t.Errorf("a file without sums through the VFS: %d rows, %v", n, err)
	}
}
