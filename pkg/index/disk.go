package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/hectormem/hector/pkg/session"
)

// diskStore is the in-process Store kept on disk: one SQLite file in the
// data directory holding every owner's documents, BM25 postings and
// vectors, each table keyed by the owner first, so that a search reads
// only its owner's rows and the page cache keeps the users who are asked
// about. The heap holds only the documents of the last second, until they
// are flushed (diskmem.go): a million turns cost the disk, not the memory,
// and a restart opens the file instead of reading it.
//
// It is its own file, not tables in the sessions' database: the index is
// derived and may be thrown away (a rebuild writes a new file and renames
// it over the old), and its writes never wait on the sessions' write lock,
// nor appends on its.
type diskStore struct {
	path   string
	logger func() *slog.Logger

	mu     sync.RWMutex // held to read or write the handles; exclusively to swap the file
	db     *diskDB      // nil until opened
	schema Schema       // as the file says: Fingerprint "" while it holds nothing

	// onDamage is told when a page read from the file is not what was
	// written to it: the index that owns the store builds the file again
	// from the feed (Index.heal). Set before the store is used.
	onDamage func(err error)
}

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

// Open opens the file, the first time. A file that is not a readable
// index (damaged, or of another layout) is set aside and the store starts
// empty, to be filled from the change feed; only a directory that cannot
// be written is an error.
func (s *diskStore) Open(ctx context.Context, schema Schema) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		if err := s.load(ctx); err != nil {
			return err
		}
	}
	if s.schema.Fingerprint == "" { // empty: it takes the schema it is opened with
		if err := s.setSchema(ctx, s.db, schema); err != nil {
			return err
		}
	}
	if s.schema.Fingerprint != schema.Fingerprint {
		return fmt.Errorf("%w: it was built with %q and is configured with %q", ErrNeedsRebuild, s.schema.Fingerprint, schema.Fingerprint)
	}
	return nil
}

// load opens the file and reads its schema; callers hold mu.
func (s *diskStore) load(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return fmt.Errorf("index: directory of %s: %w", s.path, err)
	}
	if err := writable(s.path); err != nil {
		return err
	}
	_, statErr := os.Stat(s.path)
	err := s.openFile(ctx)
	if err == nil {
		if os.IsNotExist(statErr) {
			s.logger().Info("index: no index file yet; the index is built from the sessions' change feed", "path", s.path)
		}
		return nil
	}
	if !unreadable(err) {
		return err
	}
	s.logger().Warn("index: the index file is damaged or unreadable; it is set aside and the index is built again from the sessions' change feed",
		"path", s.path, "error", err)
	if err := setAside(s.path, ".damaged"); err != nil {
		return fmt.Errorf("index: setting aside %s: %w", s.path, err)
	}
	return s.openFile(ctx)
}

// setSchema records how the file's documents are made; callers hold mu.
func (s *diskStore) setSchema(ctx context.Context, db *diskDB, schema Schema) error {
	err := db.update(ctx, func(tx diskTx) error { return setMeta(ctx, tx, schemaMeta(schema)) })
	if err != nil {
		return fmt.Errorf("index: writing %s: %w", s.path, err)
	}
	s.schema = schema
	return nil
}

func (s *diskStore) Ready(ctx context.Context) error {
	return s.use(func(db *diskDB, _ Schema) error { return db.read.PingContext(ctx) })
}

// use runs fn with the open file, which no rebuild swaps meanwhile. A
// page found damaged on the way is reported (found), and the caller told
// the index is being built again.
func (s *diskStore) use(fn func(db *diskDB, schema Schema) error) error {
	s.mu.RLock()
	if s.db == nil {
		s.mu.RUnlock()
		return errors.New("index: the index file is not open")
	}
	err := fn(s.db, s.schema)
	s.mu.RUnlock()
	if damaged(err) {
		return s.found(err)
	}
	return err
}

// found reports damage read from the file.
func (s *diskStore) found(err error) error {
	if s.onDamage != nil {
		s.onDamage(err)
	}
	return fmt.Errorf("%w: a page of its file was found damaged", ErrHealing)
}

// reset sets the file aside (renamed with suffix, beside it, for whoever
// wants to look) and opens an empty one of the same schema in its place,
// its cursors at the feed's start: the index is then built again from
// the change feed.
func (s *diskStore) reset(ctx context.Context, suffix string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		s.db.close() // what it flushes goes aside with it
		s.db = nil
	}
	if err := setAside(s.path, suffix); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("index: setting aside %s: %w", s.path, err)
	}
	schema := s.schema
	if err := s.openFile(ctx); err != nil {
		return err
	}
	return s.setSchema(ctx, s.db, schema)
}

// openFile opens the file at the store's path; callers hold mu.
func (s *diskStore) openFile(ctx context.Context) (err error) {
	s.db, s.schema, err = readDiskFile(ctx, s.path, s.logger)
	if err != nil {
		return fmt.Errorf("index: opening %s: %w", s.path, err)
	}
	report := func(err error) { s.found(err) }
	s.db.onDamage.Store(&report)
	return nil
}

// Meta keys of the file's Lineage.
const (
	metaStore    = "store"
	metaErasures = "erasures"
)

// lineage is the sessions' store and erasures the file says it was
// derived from; a StoreID "" when it says none (new, or written before
// files named one).
func (s *diskStore) lineage(ctx context.Context) (lin session.Lineage, err error) {
	err = s.use(func(db *diskDB, _ Schema) error {
		meta, err := db.meta(ctx)
		lin.StoreID, _ = meta[metaStore].(string)
		lin.Erasures, _ = meta[metaErasures].(int64)
		return err
	})
	return lin, err
}

// bind records that the file is derived from lin.
func (s *diskStore) bind(ctx context.Context, lin session.Lineage) error {
	return s.use(func(db *diskDB, _ Schema) error {
		return db.update(ctx, func(tx diskTx) error {
			return setMeta(ctx, tx, map[string]any{metaStore: lin.StoreID, metaErasures: lin.Erasures})
		})
	})
}

func (s *diskStore) Write(ctx context.Context, o Owner, docs []StoredDoc) error {
	return s.use(func(db *diskDB, schema Schema) error { return db.writeDocs(ctx, o, schema, docs) })
}

func (s *diskStore) DeleteSession(ctx context.Context, o Owner, sessionID string) error {
	return s.use(func(db *diskDB, _ Schema) error { return db.deleteSession(ctx, o, sessionID) })
}

func (d *diskDB) deleteSession(ctx context.Context, o Owner, sessionID string) error {
	return d.removeWhere(ctx, o, func(sid, _ string) bool { return sid == sessionID }, sessionID)
}

func (s *diskStore) Prune(ctx context.Context, o Owner, keep func(sessionID, eventID string) bool) error {
	return s.use(func(db *diskDB, _ Schema) error {
		return db.removeWhere(ctx, o, func(sid, eid string) bool { return !keep(sid, eid) }, "")
	})
}

func (s *diskStore) Missing(ctx context.Context, o Owner, sessionID string, eventIDs []string) (missing []string, err error) {
	err = s.use(func(db *diskDB, _ Schema) error {
		missing, err = db.missing(ctx, o, sessionID, eventIDs)
		return err
	})
	return missing, err
}

func (s *diskStore) Search(ctx context.Context, o Owner, q StoreQuery) (results []SearchResult, err error) {
	text := fullText
	if q.textsLater {
		text = briefText
	}
	err = s.use(func(db *diskDB, schema Schema) error {
		switch {
		case q.Vector != nil && schema.Dimensions > 0:
			results, err = db.nearest(ctx, o, q.Vector, q.Limit, q.Filter, text)
		case q.Vector == nil && schema.Terms:
			results, err = db.bm25(ctx, o, unique(q.Terms), q.Limit, q.Filter, text)
		}
		return err
	})
	return results, err
}

func (s *diskStore) texts(ctx context.Context, o Owner, results []SearchResult) (out []SearchResult, err error) {
	err = s.use(func(db *diskDB, _ Schema) error {
		out, err = db.texts(ctx, o, results)
		return err
	})
	return out, err
}

// DropOwner deletes what is left of the owner (their row and its
// statistics) and checkpoints the file, so that the overwritten pages
// replace the old ones in the file itself, not only in its journal.
func (s *diskStore) DropOwner(ctx context.Context, o Owner) error {
	return s.use(func(db *diskDB, _ Schema) error {
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

// Close closes the file.
func (s *diskStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.close()
	s.db = nil
	return err
}

// Begin starts a full rebuild in a new file beside the live one, which
// Commit renames over it.
func (s *diskStore) Begin(ctx context.Context, schema Schema) (StoreBuild, error) {
	path := s.path + ".rebuild"
	if _, err := RemoveFile(path); err != nil {
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
		carried := cursorMeta(s.db.cursors)
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
	if _, err := RemoveFile(s.path); err != nil {
		return err
	}
	if err := os.Rename(b.path, s.path); err != nil {
		return err
	}
	syncDir(filepath.Dir(s.path))
	return s.openFile(ctx)
}

func (b *diskBuild) Abort(context.Context) error {
	_, err := RemoveFile(b.path)
	return errors.Join(b.db.close(), err)
}

// diskCursor is the disk store's Position, or its background vectors':
// kept in the file with the documents it stands for.
type diskCursor struct {
	s   *diskStore
	key string
}

func (diskCursor) Lead(context.Context) (bool, error) { return true, nil }

func (c diskCursor) Cursor(ctx context.Context) (at int64, err error) {
	err = c.s.use(func(db *diskDB, _ Schema) error {
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
	err = c.s.use(func(db *diskDB, _ Schema) error {
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
	return c.s.use(func(db *diskDB, _ Schema) error {
		db.memMu.Lock()
		if db.cursors[c.key] > to {
			db.cursors[c.key], db.cursorsMoved = to, true
		}
		db.memMu.Unlock()
		return db.flush(ctx)
	})
}

func (diskCursor) Close() error { return nil }

// writable says plainly when the index's directory or files cannot be
// written, which SQLite says in words of its own ("no such file",
// "attempt to write a readonly database"), or not at all until a write.
func writable(path string) error {
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, ".hector-write-probe-*")
	if err != nil {
		return fmt.Errorf("index: the index's directory %s cannot be written (%w): make it writable by the user Hector runs as", dir, errors.Unwrap(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	for _, suffix := range []string{"", "-wal", "-shm"} {
		f, err := os.OpenFile(path+suffix, os.O_RDWR, 0)
		switch {
		case err == nil:
			f.Close()
		case !os.IsNotExist(err):
			return fmt.Errorf("index: the index file %s cannot be written (%w): make it writable by the user Hector runs as, or remove it to have it built again", path+suffix, errors.Unwrap(err))
		}
	}
	return nil
}
