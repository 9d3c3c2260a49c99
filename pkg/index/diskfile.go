package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"

	_ "github.com/hectormem/hector/internal/fewarenas" // SQLite's C heap kept in two arenas
	"github.com/hectormem/hector/internal/pagesum"
)

// diskDB is an open index file: a pool of readers, one writer, each with
// its statements prepared once (the driver would prepare a query again on
// every call, which cost as much as running it).
type diskDB struct {
	read, write   *sql.DB
	reads, writes statements
	writeMu       sync.Mutex  // a write transaction at a time, queued in Go rather than on SQLite's busy wait
	ckptMu        sync.Mutex  // a checkpoint at a time: SQLite refuses a second rather than waiting
	committed     atomic.Bool // since the last checkpoint

	// New documents, in memory until flushed (see diskmem.go).
	memMu        sync.Mutex
	mem          *memtable        // taking writes
	flushing     *memtable        // being written to the file; nil between flushes
	cursors      map[string]int64 // as applied; the file has them as of the last flush
	cursorsMoved bool             // since the last flush
	flushMu      sync.Mutex       // a flush at a time
	viewMu       sync.RWMutex     // searches read; a flush's commit writes
	vectors      *ownerVectors    // emptied after every commit
	gate         sync.RWMutex     // staging reads; settle writes
	kick, stop   chan struct{}
	flusherDone  chan struct{}

	beforeCheckpoint func()                          // a test's, to hold a checkpoint open
	onDamage         atomic.Pointer[func(err error)] // told of a damaged page the flusher read (see diskStore.found)
}

type statements struct {
	db    *sql.DB
	cache sync.Map // query → *sql.Stmt
}

func (s *statements) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.cache.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.cache.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

func (s *statements) close() {
	s.cache.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
}

// scanner is a row to scan, or the error that kept it from being read.
type scanner interface{ Scan(dest ...any) error }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// row and query read with the readers' statements. A statement, once
// started, runs to its end: given a context that can be cancelled, the
// SQLite driver and database/sql run every row on a goroutine of their own
// to watch it, which made a search from an HTTP request a sixth slower
// than the same search from a context that cannot (BenchmarkHybridSearchOnDisk). Every read here is one
// user's rows or the file's few meta rows, so a cancelled caller waits for
// one short statement at most: the context is checked before each.
func (d *diskDB) row(ctx context.Context, query string, args ...any) scanner {
	if err := ctx.Err(); err != nil {
		return errRow{err}
	}
	st, err := d.reads.get(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(context.WithoutCancel(ctx), args...)
}

func (d *diskDB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := d.reads.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(context.WithoutCancel(ctx), args...)
}

// diskTx is a write transaction, with the writer's statements.
type diskTx struct {
	d  *diskDB
	tx *sql.Tx
}

func (t diskTx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := t.d.writes.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return t.tx.StmtContext(ctx, st), nil
}

func (t diskTx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t diskTx) row(ctx context.Context, query string, args ...any) scanner {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

func (t diskTx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// diskLayout numbers the file's tables: a file of another is built again.
// docs.terms (each term's hash) is left empty now, and read no more: files
// written before keep theirs, rather than being built again (for a hybrid
// index, hours of embedding) to save its space.
const diskLayout int64 = 3

const diskTables = `
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS owners(
	id INTEGER PRIMARY KEY, app TEXT NOT NULL, user TEXT NOT NULL,
	docs INTEGER NOT NULL DEFAULT 0, length INTEGER NOT NULL DEFAULT 0, next INTEGER NOT NULL DEFAULT 0,
	UNIQUE(app, user));
CREATE TABLE IF NOT EXISTS docs(
	id INTEGER PRIMARY KEY, owner INTEGER NOT NULL, session TEXT NOT NULL, event TEXT NOT NULL,
	seq INTEGER NOT NULL, author TEXT NOT NULL, role TEXT NOT NULL, ts BLOB, length INTEGER NOT NULL,
	terms BLOB, text TEXT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS docs_event ON docs(owner, session, event);
CREATE TABLE IF NOT EXISTS postings(
	owner INTEGER NOT NULL, term INTEGER NOT NULL, doc INTEGER NOT NULL, tf INTEGER NOT NULL, length INTEGER NOT NULL,
	PRIMARY KEY(owner, term, doc)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vectors(id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
`

// Documents and vectors are rows of ordinary tables whose row ID is the
// owner's number, then the document's (rowID): an owner's rows lie
// together as in the postings' table, and a row of a kilobyte or two (a
// long turn, a vector) is kept in its page, where a table keyed by a
// compound key overflowed it into pages of its own: 4.7 KB a vector of
// 1.5 KB.
func rowID(owner, doc int64) int64 { return owner<<32 | doc }

// ownerRows is the range of the owner's row IDs.
func ownerRows(owner int64) (first, last int64) { return rowID(owner, 0), rowID(owner, 1<<32-1) }

// docOfRow takes a document's number from its row ID, in SQL.
const docOfRow = `& 4294967295`

// Meta keys.
const (
	metaLayout      = "layout"
	metaFingerprint = "fingerprint"
	metaTerms       = "terms"
	metaDims        = "dims"
	metaCursor      = "cursor"   // the change feed is applied up to here
	metaEmbedded    = "embedded" // and embedded in the background up to here
)

// openDiskDB opens (creating) the file at path. Deleted rows are
// overwritten (secure_delete): an erased user's words must not stay in
// free pages. The page cache is bounded per connection; the system's own
// cache does the rest.
func openDiskDB(path string, logger func() *slog.Logger) (*diskDB, error) {
	registerDiskDriver.Do(func() {
		sql.Register(diskDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			// Each page keeps a checksum in its last bytes, checked as it
			// is read (internal/pagesum): the reserve, like the page
			// size, takes only in a new file, before WAL mode writes its
			// first page (and in a VACUUM: addSums), and is asked for
			// after the page size, which asks for the file's present
			// reserve again.
			// No checkpoint inside a commit: a flush commits while searches
			// wait (viewMu), and a checkpoint copies and syncs megabytes.
			// The flusher checkpoints outside every lock (checkpointQuietly).
			if _, err := c.Exec(`PRAGMA page_size = `+strconv.Itoa(diskPageSize), nil); err != nil {
				return err
			}
			if err := c.SetFileControlInt("main", pagesum.FcntlReserveBytes, pagesum.ReserveBytes); err != nil {
				return err
			}
			_, err := c.Exec(`PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0`, nil)
			return err
		}})
	})
	if err := pagesum.Register(); err != nil {
		return nil, err
	}
	if err := addSums(path, logger); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("vfs", pagesum.VFS)
	q.Set("_synchronous", "NORMAL") // the index is derived: a power cut loses its last writes and the feed has them
	q.Set("_busy_timeout", "10000")
	q.Set("_secure_delete", "on")
	q.Set("_cache_size", "-8192")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?"
	read, err := sql.Open(diskDriver, dsn+q.Encode()+"&mode=rw")
	if err != nil {
		return nil, err
	}
	q.Set("_txlock", "immediate")
	write, err := sql.Open(diskDriver, dsn+q.Encode()+"&mode=rwc")
	if err != nil {
		read.Close()
		return nil, err
	}
	read.SetMaxOpenConns(4)
	read.SetMaxIdleConns(4)
	read.SetConnMaxLifetime(0)
	// Writes take turns (writeMu) on one connection; the other prepares
	// statements while a transaction holds the first.
	write.SetMaxOpenConns(2)
	write.SetMaxIdleConns(2)
	write.SetConnMaxLifetime(0)
	d := &diskDB{read: read, write: write, reads: statements{db: read}, writes: statements{db: write}, mem: newMemtable(), vectors: newOwnerVectors()}
	if _, err := write.Exec(diskTables); err != nil {
		read.Close()
		write.Close()
		return nil, err
	}
	meta, err := d.meta(context.Background())
	if err != nil {
		read.Close()
		write.Close()
		return nil, err
	}
	d.cursors = map[string]int64{}
	for _, k := range []string{metaCursor, metaEmbedded} {
		d.cursors[k], _ = meta[k].(int64)
	}
	d.kick, d.stop, d.flusherDone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go d.flusher(logger)
	return d, nil
}

// diskDriver is SQLite with the index file's settings on every connection.
const diskDriver = "sqlite3-hector-index"

// diskPageSize is the index file's page, four times SQLite's default: a
// user's first search reads their postings, documents and vectors from
// the disk when the system no longer caches them, and a page of 16 KiB
// holds four times as many rows of one user (a user of 1,000 turns: 17
// reads of the disk a hybrid search instead of 44). Searches from the
// cache and the file's size are the same; 64 KiB read fewer still but
// loaded 13% slower and started in 1.2 s instead of 0.1 s.
const diskPageSize = 16 << 10

var registerDiskDriver sync.Once

// close flushes what is unflushed and closes the file.
func (d *diskDB) close() error {
	close(d.stop)
	<-d.flusherDone
	err := d.flush(context.Background())
	d.reads.close()
	d.writes.close()
	return errors.Join(err, d.read.Close(), d.write.Close())
}

// update runs fn in a write transaction, after which anyone's vectors
// may have changed.
func (d *diskDB) update(ctx context.Context, fn func(tx diskTx) error) error {
	return d.commit(ctx, fn, d.vectors.changed)
}

// commit runs fn in a write transaction, and then dropped, which drops
// from memory the vectors fn may have changed (ownerVectors).
func (d *diskDB) commit(ctx context.Context, fn func(tx diskTx) error, dropped func()) error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	tx, err := d.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(diskTx{d, tx}); err != nil {
		tx.Rollback()
		return err
	}
	defer dropped()
	if err := tx.Commit(); err != nil {
		return err
	}
	d.committed.Store(true)
	return nil
}

// errOtherLayout: the file was written by a Hector whose tables differ.
var errOtherLayout = errors.New("written by a Hector whose index file has another layout")

// unreadable reports whether err says the file is no index this Hector
// reads (damaged, or of another layout), rather than that it cannot be
// reached.
func unreadable(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return damaged(err) || se.Code == sqlite3.ErrFormat || se.Code == sqlite3.ErrError && strings.Contains(se.Error(), "no such")
	}
	return errors.Is(err, errOtherLayout)
}

// damaged reports whether err says a page of the file is not what was
// written to it: its checksum fails, or SQLite found it malformed.
func damaged(err error) bool {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	return pagesum.Damaged(err) || se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB
}

// addSums gives a file made before its pages kept checksums a checksum in
// every page, once: a VACUUM writes every page again, now with the
// reserve the driver asks for, and it is checkpointed into the file (page
// 1, which says the pages keep sums, first) before any other connection
// opens it. The index in it is kept: building it again would embed every
// turn again.
func addSums(path string, logger func() *slog.Logger) error {
	header := make([]byte, 100)
	f, err := os.Open(path)
	if err != nil {
		return nil // no file yet, or one openDiskDB reports on
	}
	n, _ := f.ReadAt(header, 0)
	f.Close()
	if n < 100 || string(header[:16]) != "SQLite format 3\x00" || header[20] == pagesum.ReserveBytes {
		return nil
	}
	start := time.Now()
	logger().Info("index: adding a checksum to every page of the index file, once (a minute or two for a million turns)", "path", path)
	db, err := sql.Open(diskDriver, "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=rw&_busy_timeout=10000&vfs="+pagesum.VFS)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`VACUUM; PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("index: adding checksums to %s: %w", path, err)
	}
	logger().Info("index: every page of the index file keeps a checksum", "path", path, "took", time.Since(start).Round(time.Millisecond))
	return db.Close()
}

// setAside renames a file that is not to be believed beside it, with
// suffix, kept for whoever wants to look (replacing any file set aside
// before), and removes its journal.
func setAside(path, suffix string) error {
	err := os.Rename(path, path+suffix)
	if _, rerr := RemoveFile(path); err == nil {
		err = rerr
	}
	return err
}

func readDiskFile(ctx context.Context, path string, logger func() *slog.Logger) (*diskDB, Schema, error) {
	db, err := openDiskDB(path, logger)
	if err != nil {
		return nil, Schema{}, err
	}
	schema, err := db.readSchema(ctx)
	if err != nil {
		db.close()
		return nil, Schema{}, err
	}
	return db, schema, nil
}

func (d *diskDB) readSchema(ctx context.Context) (Schema, error) {
	meta, err := d.meta(ctx)
	if err != nil {
		return Schema{}, err
	}
	if layout, ok := meta[metaLayout]; ok && layout != diskLayout {
		return Schema{}, fmt.Errorf("%w (%v)", errOtherLayout, layout)
	}
	var s Schema
	s.Fingerprint, _ = meta[metaFingerprint].(string)
	terms, _ := meta[metaTerms].(int64)
	dims, _ := meta[metaDims].(int64)
	s.Terms, s.Dimensions = terms == 1, int(dims)
	return s, nil
}

func (d *diskDB) meta(ctx context.Context) (map[string]any, error) {
	rows, err := d.query(ctx, `SELECT key, value FROM meta`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	meta := map[string]any{}
	for rows.Next() {
		var k string
		var v any
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		meta[k] = v
	}
	return meta, rows.Err()
}

// schemaMeta is how the file records schema.
func schemaMeta(schema Schema) map[string]any {
	terms := 0
	if schema.Terms {
		terms = 1
	}
	return map[string]any{metaLayout: diskLayout, metaFingerprint: schema.Fingerprint, metaTerms: terms, metaDims: schema.Dimensions}
}

func setMeta(ctx context.Context, tx diskTx, values map[string]any) error {
	for k, v := range values {
		if _, err := tx.exec(ctx, `INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, k, v); err != nil {
			return err
		}
	}
	return nil
}

// checkpoint copies the whole journal into the file and empties it,
// waiting for writers and readers to let it.
func (d *diskDB) checkpoint(ctx context.Context) error {
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	d.committed.Store(false)
	_, err := d.write.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// checkpointQuietly copies what it can of the journal into the file
// without waiting for anyone, on a reader's connection: writes and
// searches go on meanwhile. What readers still use stays for the next.
// It says how many pages the journal holds: a journal that searches never
// leave alone is never started again, and grows.
func (d *diskDB) checkpointQuietly(ctx context.Context) (journal int64, err error) {
	d.ckptMu.Lock()
	defer d.ckptMu.Unlock()
	if !d.committed.Swap(false) {
		return 0, nil
	}
	if d.beforeCheckpoint != nil {
		d.beforeCheckpoint()
	}
	var busy, done int64
	if err = d.read.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &journal, &done); err != nil {
		d.committed.Store(true)
	}
	return journal, err
}

// maxJournalPages bounds the journal: past it (64 MiB), it is checkpointed
// whole, waiting a moment for the searches under way, so that the next
// write starts it again from its beginning. Under steady searches and
// appends it grew past 200 MiB in 15 minutes without.
var maxJournalPages int64 = 64 << 20 / diskPageSize

// checkpointJournal is the flusher's checkpoint: quiet, and whole when the
// journal has grown past maxJournalPages.
func (d *diskDB) checkpointJournal(ctx context.Context) error {
	journal, err := d.checkpointQuietly(ctx)
	if err == nil && journal > maxJournalPages {
		err = d.checkpoint(ctx)
	}
	return err
}

// RemoveFile removes an index's file at path (WithFile's, or
// WithSnapshot's) with its journal, and reports whether there was any.
func RemoveFile(path string) (removed bool, err error) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		switch err := os.Remove(path + suffix); {
		case err == nil:
			removed = true
		case !os.IsNotExist(err):
			return removed, err
		}
	}
	return removed, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
