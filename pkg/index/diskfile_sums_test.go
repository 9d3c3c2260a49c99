package index

import (
	"database/sql"
	"encoding/binary"
	"io"

	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hectormem/hector/internal/pagesum"
)

// A file written before pages kept checksums is given one in every page
// when it is opened, once, and keeps what it held.
func TestAnOlderFileIsGivenChecksums(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	old, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`PRAGMA page_size = 16384; PRAGMA journal_mode = WAL;` + diskTables +
		`INSERT INTO meta(key, value) VALUES('cursor', 42), ('fingerprint', 'an older hector')`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	if raw, _ := os.ReadFile(path); raw[20] != 0 {
		t.Fatalf("the older file reserves %d bytes a page", raw[20])
	}
	logger := func() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
	db, schema, err := readDiskFile(t.Context(), path, logger)
	if err != nil {
		t.Fatal(err)
	}
	if db.cursors[metaCursor] != 42 || schema.Fingerprint != "an older hector" {
		t.Errorf("after adding checksums: cursor %d, fingerprint %q", db.cursors[metaCursor], schema.Fingerprint)
	}
	if err := db.close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if raw[20] != pagesum.ReserveBytes {
		t.Fatalf("the file reserves %d bytes a page, want %d", raw[20], pagesum.ReserveBytes)
	}
	for p := 0; p < len(raw)/diskPageSize; p++ {
		page := raw[p*diskPageSize : (p+1)*diskPageSize]
		if got, want := binary.LittleEndian.Uint64(page[diskPageSize-8:]), pagesum.Sum(page); got != want {
			t.Errorf("page %d keeps sum %x, its content sums to %x", p+1, got, want)
		}
	}
}
