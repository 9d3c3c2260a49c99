package artifacts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/go-sql-driver/mysql"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/hectormem/hector/internal/writelock"
)

// chunkSize is how much of an artifact one row holds: the most the SQL
// store keeps in memory per upload or download.
const chunkSize = 1 << 20

type versionRow struct {
	AppName   string `gorm:"primaryKey;size:128"`
	UserID    string `gorm:"primaryKey;size:128"`
	SessionID string `gorm:"primaryKey;size:128"` // "" for the user's artifacts
	Name      string `gorm:"primaryKey;size:255"`
	Version   int64  `gorm:"primaryKey;autoIncrement:false"`
	BlobID    string `gorm:"size:36;not null"`
	MimeType  string `gorm:"size:255;not null"`
	Size      int64  `gorm:"not null"`
	SHA256    string `gorm:"column:sha256;size:64;not null"`
	CreatedNs int64  `gorm:"not null"`
	Metadata  string `gorm:"type:text"`
}

func (versionRow) TableName() string { return "artifact_versions" }

type chunkRow struct {
	BlobID    string `gorm:"primaryKey;size:36"`
	Idx       int64  `gorm:"primaryKey;autoIncrement:false"`
	Data      []byte `gorm:"not null"`
	CreatedNs int64  `gorm:"not null"`
}

func (chunkRow) TableName() string { return "artifact_chunks" }

type sqlStore struct {
	options
	db *gorm.DB
}

// NewSQL returns a Service storing artifacts in db (SQLite or PostgreSQL,
// usually the sessions' database), in chunks of 1 MiB. It creates its tables
// and removes the chunks of uploads that died more than an hour ago.
func NewSQL(db *gorm.DB, opts ...Option) (Service, error) {
	if err := db.AutoMigrate(&versionRow{}, &chunkRow{}); err != nil {
		return nil, fmt.Errorf("artifacts: creating tables: %w", err)
	}
	release := writelock.Hold(db)
	err := db.Exec("DELETE FROM artifact_chunks WHERE created_ns < ? AND blob_id NOT IN (SELECT blob_id FROM artifact_versions)",
		time.Now().Add(-time.Hour).UnixNano()).Error
	release()
	if err != nil {
		return nil, fmt.Errorf("artifacts: removing unfinished uploads: %w", err)
	}
	return &sqlStore{options: newOptions(opts), db: db}, nil
}

func (s *sqlStore) Save(ctx context.Context, req *SaveRequest) (*Info, error) {
	o, meta, c, err := s.upload(req)
	if err != nil {
		return nil, err
	}
	db := s.db.WithContext(ctx)
	blobID := uuid.NewString()
	// Chunks go in first, each on its own, so no lock is held while a slow
	// client uploads; the version row that makes them visible comes last.
	if err := s.writeChunks(db, blobID, c); err != nil {
		s.dropChunks(db, blobID)
		return nil, err
	}
	row := versionRow{AppName: o.app, UserID: o.user, SessionID: o.session, Name: req.Name, BlobID: blobID,
		MimeType: c.mimeType, Size: c.size, SHA256: c.digest(), CreatedNs: req.createdAt().UnixNano(), Metadata: meta}
	// One statement picks the next version and claims it; two savers that
	// pick the same one collide on the primary key and the loser retries,
	// after a random wait that grows, so that many savers of one artifact
	// all get through (each collision is another saver's progress).
	deadline := time.Now().Add(claimFor)
	for attempt := 1; ; attempt++ {
		err = s.claimVersion(db, &row)
		if err == nil || time.Now().After(deadline) || !(s.isDuplicateKey(err) || isDeadlock(err)) {
			break
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(time.Duration(1+rand.IntN(min(1<<attempt, 50))) * time.Millisecond):
			continue
		}
		break
	}
	if err != nil {
		s.dropChunks(db, blobID)
		return nil, fmt.Errorf("artifacts: saving %q: %w", req.Name, err)
	}
	return row.info()
}

// claimFor bounds how long a save keeps claiming a version number.
const claimFor = 10 * time.Second

// dropChunks removes the chunks of an upload that did not become a version.
func (s *sqlStore) dropChunks(db *gorm.DB, blobID string) {
	defer writelock.Hold(db)()
	db.Where("blob_id = ?", blobID).Delete(&chunkRow{})
}

func (s *sqlStore) claimVersion(db *gorm.DB, row *versionRow) error {
	defer writelock.Hold(db)()
	if db.Dialector.Name() != "mysql" {
		return db.Raw(`INSERT INTO artifact_versions (app_name, user_id, session_id, name, version, blob_id, mime_type, size, sha256, created_ns, metadata)
			VALUES (?, ?, ?, ?, (SELECT coalesce(max(version), 0) + 1 FROM artifact_versions WHERE app_name = ? AND user_id = ? AND session_id = ? AND name = ?), ?, ?, ?, ?, ?, ?)
			RETURNING version`,
			row.AppName, row.UserID, row.SessionID, row.Name, row.AppName, row.UserID, row.SessionID, row.Name,
			row.BlobID, row.MimeType, row.Size, row.SHA256, row.CreatedNs, row.Metadata).Scan(&row.Version).Error
	}
	// MySQL has no RETURNING, nor a subquery on the table an INSERT ...
	// VALUES writes: INSERT ... SELECT, then read the version back by blob.
	// At READ COMMITTED the SELECT takes no gap locks, so concurrent savers
	// collide on the key and retry rather than deadlock.
	return db.Transaction(func(db *gorm.DB) error {
		return claimVersionMySQL(db, row)
	}, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
}

func claimVersionMySQL(db *gorm.DB, row *versionRow) error {
	err := db.Exec(`INSERT INTO artifact_versions (app_name, user_id, session_id, name, version, blob_id, mime_type, size, sha256, created_ns, metadata)
		SELECT ?, ?, ?, ?, coalesce(max(version), 0) + 1, ?, ?, ?, ?, ?, ? FROM artifact_versions WHERE app_name = ? AND user_id = ? AND session_id = ? AND name = ?`,
		row.AppName, row.UserID, row.SessionID, row.Name, row.BlobID, row.MimeType, row.Size, row.SHA256, row.CreatedNs, row.Metadata,
		row.AppName, row.UserID, row.SessionID, row.Name).Error
	if err != nil {
		return err
	}
	return db.Raw(`SELECT version FROM artifact_versions WHERE app_name = ? AND user_id = ? AND session_id = ? AND name = ? AND blob_id = ?`,
		row.AppName, row.UserID, row.SessionID, row.Name, row.BlobID).Scan(&row.Version).Error
}

// isDeadlock tells MySQL's deadlock, which InnoDB resolves by failing one
// of two concurrent savers: that one tries again.
func isDeadlock(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == 1213
}

// chunkBuffers recycles upload buffers: a save of a few bytes should not
// allocate a megabyte.
var chunkBuffers = sync.Pool{New: func() any { return new([chunkSize]byte) }}

func (s *sqlStore) writeChunks(db *gorm.DB, blobID string, c *content) error {
	pooled := chunkBuffers.Get().(*[chunkSize]byte)
	defer chunkBuffers.Put(pooled)
	buf := pooled[:]
	for idx := int64(0); ; idx++ {
		n, err := io.ReadFull(c, buf)
		if c.err != nil {
			return c.err
		}
		if n > 0 {
			// The lock is held per chunk, not while the client sends the next.
			release := writelock.Hold(db)
			err := db.Create(&chunkRow{BlobID: blobID, Idx: idx, Data: buf[:n], CreatedNs: time.Now().UnixNano()}).Error
			release()
			if err != nil {
				return fmt.Errorf("artifacts: storing content: %w", err)
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// isDuplicateKey tells a collision on the primary key. MySQL's error is
// looked for under any wrapping (gorm's translator asserts its type, and
// misses it wrapped).
func (s *sqlStore) isDuplicateKey(err error) bool {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number == 1062
	}
	t, ok := s.db.Dialector.(gorm.ErrorTranslator)
	return ok && errors.Is(t.Translate(err), gorm.ErrDuplicatedKey)
}

func (s *sqlStore) Open(ctx context.Context, ref Ref, version int64) (*Info, io.ReadCloser, error) {
	o, err := resolve(ref)
	if err != nil {
		return nil, nil, err
	}
	if version < 0 {
		return nil, nil, invalid("version %d is negative", version)
	}
	q := s.db.WithContext(ctx).Where("app_name = ? AND user_id = ? AND session_id = ? AND name = ?", o.app, o.user, o.session, ref.Name)
	if version > 0 {
		q = q.Where("version = ?", version)
	}
	var rows []versionRow
	if err := q.Order("version DESC").Limit(1).Find(&rows).Error; err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, notFound(ref, version)
	}
	info, err := rows[0].info()
	if err != nil {
		return nil, nil, err
	}
	return info, &chunkReader{db: s.db.WithContext(ctx), blobID: rows[0].BlobID, left: rows[0].Size}, nil
}

// chunkReader streams an artifact one chunk row at a time.
type chunkReader struct {
	db     *gorm.DB
	blobID string
	idx    int64
	left   int64 // bytes not yet read
	buf    []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		if r.left == 0 {
			return 0, io.EOF
		}
		var chunk chunkRow
		err := r.db.Where("blob_id = ? AND idx = ?", r.blobID, r.idx).Take(&chunk).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return 0, fmt.Errorf("artifacts: content is missing from chunk %d on (was the artifact deleted while being read?)", r.idx)
		} else if err != nil {
			return 0, err
		}
		r.buf, r.idx = chunk.Data, r.idx+1
	}
	n := copy(p, r.buf)
	r.buf, r.left = r.buf[n:], r.left-int64(n)
	return n, nil
}

func (r *chunkReader) Close() error { r.buf, r.left = nil, 0; return nil }

func (s *sqlStore) List(ctx context.Context, appName, userID, sessionID string) ([]*Info, error) {
	if err := validateView(appName, userID, sessionID); err != nil {
		return nil, err
	}
	var rows []versionRow
	err := s.db.WithContext(ctx).Raw(`SELECT * FROM artifact_versions v
		WHERE app_name = ? AND user_id = ? AND session_id IN (?, '')
		AND version = (SELECT max(version) FROM artifact_versions w
			WHERE w.app_name = v.app_name AND w.user_id = v.user_id AND w.session_id = v.session_id AND w.name = v.name)
		ORDER BY name`, appName, userID, sessionID).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	return infos(rows)
}

func (s *sqlStore) Versions(ctx context.Context, ref Ref) ([]*Info, error) {
	o, err := resolve(ref)
	if err != nil {
		return nil, err
	}
	var rows []versionRow
	err = s.db.WithContext(ctx).Where("app_name = ? AND user_id = ? AND session_id = ? AND name = ?", o.app, o.user, o.session, ref.Name).
		Order("version").Find(&rows).Error
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, notFound(ref, 0)
	}
	return infos(rows)
}

func (s *sqlStore) Delete(ctx context.Context, ref Ref) error {
	o, err := resolve(ref)
	if err != nil {
		return err
	}
	n, err := s.delete(ctx, "app_name = ? AND user_id = ? AND session_id = ? AND name = ?", o.app, o.user, o.session, ref.Name)
	if err == nil && n == 0 {
		return notFound(ref, 0)
	}
	return err
}

func (s *sqlStore) DeleteSession(ctx context.Context, appName, userID, sessionID string) error {
	if err := validateSession(appName, userID, sessionID); err != nil {
		return err
	}
	_, err := s.delete(ctx, "app_name = ? AND user_id = ? AND session_id = ?", appName, userID, sessionID)
	return err
}

func (s *sqlStore) Sessions(ctx context.Context, appName, userID string) ([]string, error) {
	if err := validateView(appName, userID, ""); err != nil {
		return nil, err
	}
	var ids []string
	err := s.db.WithContext(ctx).Model(&versionRow{}).Distinct("session_id").
		Where("app_name = ? AND user_id = ? AND session_id <> ''", appName, userID).Pluck("session_id", &ids).Error
	slices.Sort(ids) // in bytes' order, whatever the database's collation
	return ids, err
}

// delete removes the versions matching where, and their content, in one transaction.
func (s *sqlStore) delete(ctx context.Context, where string, args ...any) (int64, error) {
	var n int64
	defer writelock.Hold(s.db)()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		blobs := tx.Model(&versionRow{}).Select("blob_id").Where(where, args...)
		if err := tx.Where("blob_id IN (?)", blobs).Delete(&chunkRow{}).Error; err != nil {
			return err
		}
		res := tx.Where(where, args...).Delete(&versionRow{})
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

func (r *versionRow) info() (*Info, error) {
	meta, err := decodeMetadata(r.Metadata)
	if err != nil {
		return nil, err
	}
	return &Info{Name: r.Name, Version: r.Version, MimeType: r.MimeType, Size: r.Size, SHA256: r.SHA256,
		CreatedAt: time.Unix(0, r.CreatedNs).UTC(), Metadata: meta}, nil
}

func infos(rows []versionRow) ([]*Info, error) {
	out := make([]*Info, len(rows))
	for i := range rows {
		info, err := rows[i].info()
		if err != nil {
			return nil, err
		}
		out[i] = info
	}
	return out, nil
}
