package index

import (
	"database/sql"
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
