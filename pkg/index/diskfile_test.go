package index

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

// A new index file has pages of diskPageSize, in WAL mode; a file made
// before with SQLite's default pages keeps them; both take documents.
func TestTheIndexFileKeepsThePageSizeItWasMadeWith(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.db")
	raw, err := sql.Open("sqlite3", "file:"+old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE x(a); DROP TABLE x`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	for path, want := range map[string]int{filepath.Join(dir, "new.db"): diskPageSize, old: 4096} {
		store := fileWithOneDocument(t, path)
		var size, docs int
		var mode string
		if err := store.db.read.QueryRowContext(ctx, `SELECT page_size, journal_mode, (SELECT count(*) FROM docs) FROM pragma_page_size(), pragma_journal_mode()`).Scan(&size, &mode, &docs); err != nil {
			t.Fatal(err)
		}
		if size != want || mode != "wal" || docs != 1 {
			t.Errorf("%s: page size %d, journal %s, %d documents; want %d, wal, 1", filepath.Base(path), size, mode, docs, want)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// Reads run to their end once started (see diskDB.query), so a cancelled
// search must be refused before each of its statements: it finds nothing
// and says why, and the same search with a live context finds the document.
func TestACancelledSearchOfTheFileIsRefused(t *testing.T) {
	ctx := t.Context()
	store := fileWithOneDocument(t, filepath.Join(t.TempDir(), "index.db"))
	defer store.Close()
	owner := Owner{"app", "u"}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if res, err := store.Search(cancelled, owner, StoreQuery{Terms: []string{"marker"}, Limit: 10}); !errors.Is(err, context.Canceled) || len(res) != 0 {
		t.Errorf("a cancelled search gave %d results and error %v; want none and context.Canceled", len(res), err)
	}
	// Each statement of a search that is cancelled midway is refused too,
	// prepared already as a search's are.
	var n int
	if err := store.db.row(ctx, `SELECT count(*) FROM docs`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d documents in the file, error %v; want 1", n, err)
	}
	if rows, err := store.db.query(ctx, `SELECT key FROM meta`); err != nil {
		t.Fatal(err)
	} else {
		rows.Close()
	}
	if rows, err := store.db.query(cancelled, `SELECT key FROM meta`); !errors.Is(err, context.Canceled) {
		if err == nil {
			rows.Close()
		}
		t.Errorf("a cancelled query: error %v; want context.Canceled", err)
	}
	if err := store.db.row(cancelled, `SELECT count(*) FROM docs`).Scan(&n); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled row: error %v; want context.Canceled", err)
	}
	if res, err := store.Search(ctx, owner, StoreQuery{Terms: []string{"marker"}, Limit: 10}); err != nil || len(res) != 1 {
		t.Errorf("the search gave %d results and error %v; want the document", len(res), err)
	}
}

// fileWithOneDocument opens a disk store at path and writes one document,
// "marker", of owner app/u into its file (not only its memory).
func fileWithOneDocument(t *testing.T, path string) *diskStore {
	t.Helper()
	ctx := t.Context()
	store := newDiskStore(path, quiet)
	if err := store.Open(ctx, Schema{Fingerprint: "test", Terms: true}); err != nil {
		t.Fatal(err)
	}
	doc := StoredDoc{Document: Document{SessionID: "s", EventID: "e", Text: "marker"}, Terms: []string{"marker"}}
	if err := store.Write(ctx, Owner{"app", "u"}, []StoredDoc{doc}); err != nil {
		t.Fatal(err)
	}
	if err := store.db.flush(ctx); err != nil {
		t.Fatal(err)
	}
	return store
}
