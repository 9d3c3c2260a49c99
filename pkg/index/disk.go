package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/mattn/go-sqlite3"
)

// diskStore is the in-process Store kept on disk: one SQLite file in the
// data directory holding every owner's documents, BM25 postings and
// vectors, each table keyed by the owner first, so that a search reads
// only its owner's rows and the page cache keeps the users who are asked
// about. The heap holds no document: a million turns cost the disk, not
// the memory, and a restart opens the file instead of reading it.
//
// It is its own file, not tables in the sessions' database: the index is
// derived and may be thrown away (a rebuild writes a new file and renames
// it over the old), and its writes never wait on the sessions' write lock,
// nor appends on its.
type diskStore struct {
	path   string
	logger func() *slog.Logger

	mu     sync.RWMutex // held to read or write the handles; exclusively to swap the file
	opened bool
	db     *diskDB // nil until opened
	schema Schema  // as the file says: Fingerprint "" while it holds nothing
	stale  bool    // made another way: searches say to rebuild until a rebuild commits
}

// diskDB is an open index file: a pool of readers, one writer, each with
// its statements prepared once (the driver would prepare a query again on
// every call, which cost as much as running it).
type diskDB struct {
	read, write   *sql.DB
	reads, writes statements
	writeMu       sync.Mutex // a write transaction at a time, queued in Go rather than on SQLite's busy wait

	// New documents, in memory until flushed (see diskmem.go).
	memMu        sync.Mutex
	mem          *memtable        // taking writes
	flushing     *memtable        // being written to the file; nil between flushes
	cursors      map[string]int64 // as applied; the file has them as of the last flush
	cursorsMoved bool             // since the last flush
	flushMu      sync.Mutex       // a flush at a time
	viewMu       sync.RWMutex     // searches read; a flush's commit writes
	gate         sync.RWMutex     // staging reads; settle writes
	kick, stop   chan struct{}
	flusherDone  chan struct{}
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

// row and query read with the readers' statements.
func (d *diskDB) row(ctx context.Context, query string, args ...any) scanner {
	st, err := d.reads.get(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

func (d *diskDB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := d.reads.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
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

func newDiskStore(path string, logger func() *slog.Logger) *diskStore {
	return &diskStore{path: path, logger: logger}
}

func (s *diskStore) Name() string { return "in process (" + s.path + ")" }

func (s *diskStore) IsPersisted() bool { return true }

func (s *diskStore) position(vectors bool) Position {
	if vectors {
		return diskCursor{s, metaEmbedded}
	}
	return diskCursor{s, metaCursor}
}

// openDiskDB opens (creating) the file at path. Deleted rows are
// overwritten (secure_delete): an erased user's words must not stay in
// free pages. The page cache is bounded per connection; the system's own
// cache does the rest.
func openDiskDB(path string, logger func() *slog.Logger) (*diskDB, error) {
	registerDiskDriver.Do(func() {
		sql.Register(diskDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			// Checkpoint the journal into the file every 64 MiB rather than
			// every 4: a page written by many transactions is copied once.
			_, err := c.Exec(`PRAGMA wal_autocheckpoint = 16384`, nil)
			return err
		}})
	})
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
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
	d := &diskDB{read: read, write: write, reads: statements{db: read}, writes: statements{db: write}, mem: newMemtable()}
	if _, err := write.Exec(diskTables); err != nil {
		errors.Join(read.Close(), write.Close())
		return nil, err
	}
	meta, err := d.meta(context.Background())
	if err != nil {
		errors.Join(read.Close(), write.Close())
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

// update runs fn in a write transaction.
func (d *diskDB) update(ctx context.Context, fn func(tx diskTx) error) error {
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
	return tx.Commit()
}

// Open opens the file, the first time. A file that is not a readable
// index (damaged, or of another layout) is set aside and the store starts
// empty, to be filled from the change feed; only a directory that cannot
// be written is an error.
func (s *diskStore) Open(ctx context.Context, schema Schema) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.opened {
		if err := s.load(ctx); err != nil {
			return err
		}
		s.opened = true
	}
	if s.schema.Fingerprint == "" { // empty: it takes the schema it is opened with
		if err := s.setSchema(ctx, s.db, schema); err != nil {
			return err
		}
	}
	if s.schema.Fingerprint != schema.Fingerprint {
		s.stale = true
		return fmt.Errorf("%w: it was built with %q and is configured with %q", ErrNeedsRebuild, s.schema.Fingerprint, schema.Fingerprint)
	}
	return nil
}

// load opens the file and reads its schema; callers hold mu.
func (s *diskStore) load(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return fmt.Errorf("index: directory of %s: %w", s.path, err)
	}
	_, statErr := os.Stat(s.path)
	db, schema, err := readDiskFile(ctx, s.path, s.logger)
	if err == nil {
		if os.IsNotExist(statErr) {
			s.logger().Info("index: no index file yet; the index is built from the sessions' change feed", "path", s.path)
		}
		s.db, s.schema = db, schema
		return nil
	}
	if !unreadable(err) {
		return fmt.Errorf("index: opening %s: %w", s.path, err)
	}
	s.logger().Warn("index: the index file is damaged or unreadable; it is set aside and the index is built again from the sessions' change feed",
		"path", s.path, "error", err)
	if err := setAside(s.path); err != nil {
		return fmt.Errorf("index: setting aside %s: %w", s.path, err)
	}
	if s.db, s.schema, err = readDiskFile(ctx, s.path, s.logger); err != nil {
		return fmt.Errorf("index: opening %s: %w", s.path, err)
	}
	return nil
}

// errOtherLayout: the file was written by a Hector whose tables differ.
var errOtherLayout = errors.New("written by a Hector whose index file has another layout")

// unreadable reports whether err says the file is no index this Hector
// reads, rather than that it cannot be reached.
func unreadable(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB || se.Code == sqlite3.ErrFormat
	}
	return errors.Is(err, errOtherLayout)
}

// setAside renames a damaged file (and its journal) beside it, kept for
// whoever wants to look, and replacing any file set aside before.
func setAside(path string) error {
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return os.Rename(path, path+".damaged")
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

// setSchema records how the file's documents are made; callers hold mu.
func (s *diskStore) setSchema(ctx context.Context, db *diskDB, schema Schema) error {
	err := db.update(ctx, func(tx diskTx) error { return setMeta(ctx, tx, schemaMeta(schema)) })
	if err != nil {
		return fmt.Errorf("index: writing %s: %w", s.path, err)
	}
	s.schema, s.stale = schema, false
	return nil
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

func (s *diskStore) Ready(ctx context.Context) error {
	return s.use(ctx, func(db *diskDB, _ Schema) error { return db.read.PingContext(ctx) })
}

// use runs fn with the open file, which no rebuild swaps meanwhile.
func (s *diskStore) use(ctx context.Context, fn func(db *diskDB, schema Schema) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return errors.New("index: the index file is not open")
	}
	return fn(s.db, s.schema)
}

func (s *diskStore) Write(ctx context.Context, o Owner, docs []StoredDoc) error {
	return s.use(ctx, func(db *diskDB, schema Schema) error { return db.writeDocs(ctx, o, schema, docs) })
}

func (s *diskStore) DeleteSession(ctx context.Context, o Owner, sessionID string) error {
	return s.use(ctx, func(db *diskDB, _ Schema) error { return db.deleteSession(ctx, o, sessionID) })
}

func (d *diskDB) deleteSession(ctx context.Context, o Owner, sessionID string) error {
	return d.removeWhere(ctx, o, func(sid, _ string) bool { return sid == sessionID }, sessionID)
}

func (s *diskStore) Prune(ctx context.Context, o Owner, keep func(sessionID, eventID string) bool) error {
	return s.use(ctx, func(db *diskDB, _ Schema) error {
		return db.removeWhere(ctx, o, func(sid, eid string) bool { return !keep(sid, eid) }, "")
	})
}

func (s *diskStore) Missing(ctx context.Context, o Owner, sessionID string, eventIDs []string) (missing []string, err error) {
	err = s.use(ctx, func(db *diskDB, _ Schema) error {
		missing, err = db.missing(ctx, o, sessionID, eventIDs)
		return err
	})
	return missing, err
}

func (s *diskStore) Search(ctx context.Context, o Owner, q StoreQuery) (results []SearchResult, err error) {
	err = s.use(ctx, func(db *diskDB, schema Schema) error {
		switch {
		case q.Vector != nil && schema.Dimensions > 0:
			results, err = db.nearest(ctx, o, q.Vector, q.Limit, q.Filter)
		case q.Vector == nil && schema.Terms:
			results, err = db.bm25(ctx, o, unique(q.Terms), q.Limit, q.Filter)
		}
		return err
	})
	return results, err
}

// DropOwner deletes what is left of the owner (their row and its
// statistics) and checkpoints the file, so that the overwritten pages
// replace the old ones in the file itself, not only in its journal.
func (s *diskStore) DropOwner(ctx context.Context, o Owner) error {
	return s.use(ctx, func(db *diskDB, _ Schema) error {
		done, err := db.settle(ctx)
		if err != nil {
			return err
		}
		defer done()
		err = db.update(ctx, func(tx diskTx) error {
			id, found, err := ownerID(ctx, tx, o)
			if err != nil || !found {
				return err
			}
			for _, table := range []string{"postings", "docs"} {
				if _, err := tx.exec(ctx, `DELETE FROM `+table+` WHERE owner = ?`, id); err != nil {
					return err
				}
			}
			first, last := ownerRows(id)
			if _, err := tx.exec(ctx, `DELETE FROM vectors WHERE id BETWEEN ? AND ?`, first, last); err != nil {
				return err
			}
			_, err = tx.exec(ctx, `DELETE FROM owners WHERE id = ?`, id)
			return err
		})
		if err != nil {
			return err
		}
		return db.checkpoint(ctx)
	})
}

func (d *diskDB) checkpoint(ctx context.Context) error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	_, err := d.write.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// Close closes the file.
func (s *diskStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.close()
	s.db, s.opened = nil, false
	return err
}

// Begin starts a full rebuild in a new file beside the live one, which
// Commit renames over it.
func (s *diskStore) Begin(ctx context.Context, schema Schema) (StoreBuild, error) {
	path := s.path + ".rebuild"
	if err := removeDiskFile(path); err != nil {
		return nil, fmt.Errorf("index: removing an earlier rebuild's file: %w", err)
	}
	db, err := openDiskDB(path, s.logger)
	if err != nil {
		return nil, fmt.Errorf("index: creating %s: %w", path, err)
	}
	b := &diskBuild{s: s, path: path, db: db, schema: schema}
	err = db.update(ctx, func(tx diskTx) error { return setMeta(ctx, tx, schemaMeta(schema)) })
	if err != nil {
		b.Abort(ctx)
		return nil, err
	}
	return b, nil
}

func removeDiskFile(path string) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

type diskBuild struct {
	s      *diskStore
	path   string
	db     *diskDB
	schema Schema
}

func (b *diskBuild) Write(ctx context.Context, o Owner, docs []StoredDoc) error {
	return b.db.writeDocs(ctx, o, b.schema, docs)
}

func (b *diskBuild) DeleteSession(ctx context.Context, o Owner, sessionID string) error {
	return b.db.deleteSession(ctx, o, sessionID)
}

// Commit carries the live file's cursors over, then renames the new file
// over the live one; searches wait for the moment it takes.
func (b *diskBuild) Commit(ctx context.Context) error {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		s.db.memMu.Lock()
		carried := map[string]any{}
		for k, v := range s.db.cursors {
			carried[k] = v
		}
		s.db.memMu.Unlock()
		if err := b.db.flush(ctx); err != nil {
			return err
		}
		if err := b.db.update(ctx, func(tx diskTx) error { return setMeta(ctx, tx, carried) }); err != nil {
			return err
		}
	}
	if err := b.db.close(); err != nil { // the last connection checkpoints and removes the journal
		return err
	}
	if s.db != nil {
		if err := s.db.close(); err != nil {
			return err
		}
		s.db = nil
	}
	if err := removeDiskFile(s.path); err != nil {
		return err
	}
	if err := os.Rename(b.path, s.path); err != nil {
		return err
	}
	syncDir(filepath.Dir(s.path))
	db, schema, err := readDiskFile(ctx, s.path, s.logger)
	if err != nil {
		return err
	}
	s.db, s.schema, s.stale, s.opened = db, schema, false, true
	return nil
}

func (b *diskBuild) Abort(context.Context) error {
	return errors.Join(b.db.close(), removeDiskFile(b.path))
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// diskCursor is the disk store's Position, or its background vectors':
// kept in the file with the documents it stands for.
type diskCursor struct {
	s   *diskStore
	key string
}

func (diskCursor) Lead(context.Context) (bool, error) { return true, nil }

func (c diskCursor) Cursor(ctx context.Context) (at int64, err error) {
	err = c.s.use(ctx, func(db *diskDB, _ Schema) error {
		db.memMu.Lock()
		defer db.memMu.Unlock()
		at = db.cursors[c.key]
		return nil
	})
	return at, err
}

// Advance moves the cursor in memory: the file has it with the next flush,
// which holds what the cursor stands for.
func (c diskCursor) Advance(ctx context.Context, from, to int64) (moved bool, err error) {
	err = c.s.use(ctx, func(db *diskDB, _ Schema) error {
		db.memMu.Lock()
		defer db.memMu.Unlock()
		if moved = db.cursors[c.key] == from; moved {
			db.cursors[c.key], db.cursorsMoved = to, true
		}
		return nil
	})
	return moved, err
}

// Rewind ends a full rebuild: flushed at once, so a restart goes on from
// where the rebuild read the feed.
func (c diskCursor) Rewind(ctx context.Context, to int64) error {
	return c.s.use(ctx, func(db *diskDB, _ Schema) error {
		db.memMu.Lock()
		if db.cursors[c.key] > to {
			db.cursors[c.key], db.cursorsMoved = to, true
		}
		db.memMu.Unlock()
		return db.flush(ctx)
	})
}

func (diskCursor) Close() error { return nil }
