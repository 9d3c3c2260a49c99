// Package position keeps an external index's place in the sessions' change
// feed in the sessions' own database, where every replica reads it, with a
// lease that lets one replica at a time follow the feed.
//
// On PostgreSQL the lease is a session-level advisory lock (on MySQL a
// named lock, GET_LOCK) held on a connection of its own: when the leading
// process dies, its connection closes, the server releases the lock, and
// the next replica to ask takes over. SQLite is used by one process at a
// time, whose indexes lead in turn.
package position

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hectormem/hector/internal/writelock"
	"github.com/hectormem/hector/pkg/index"
)

type row struct {
	Name      string `gorm:"primaryKey;size:255"`
	Cursor    int64  `gorm:"not null"`
	UpdatedAt time.Time
}

func (row) TableName() string { return "index_positions" }

// SQL is an index.Position in a database.
type SQL struct {
	db   *gorm.DB
	name string

	mu   sync.Mutex
	conn *sql.Conn // holds the advisory lock while leading (PostgreSQL)
	held bool      // leading (other databases)
}

var _ index.Position = (*SQL)(nil)

// NewSQL returns the position of the index called name (one row of the
// index_positions table, made if missing).
func NewSQL(ctx context.Context, db *gorm.DB, name string) (*SQL, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: an index position needs a name", index.ErrInvalidArgument)
	}
	db = db.WithContext(ctx)
	if err := db.AutoMigrate(&row{}); err != nil {
		return nil, fmt.Errorf("index position: creating its table: %w", err)
	}
	release := writelock.Hold(db)
	err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&row{Name: name}).Error
	release()
	if err != nil {
		return nil, fmt.Errorf("index position: %w", err)
	}
	return &SQL{db: db, name: name}, nil
}

// serverLock is the statement that takes the lease as a lock the database
// server holds for one connection, "" for databases without one (SQLite).
func (p *SQL) serverLock() string {
	switch p.db.Dialector.Name() {
	case "postgres":
		// The key covers the schema too: deployments sharing a database in
		// separate schemas do not share a lease.
		return "SELECT pg_try_advisory_lock(hashtextextended(current_schema() || '/hector-index/' || $1, 0))"
	case "mysql":
		// Lock names are server-wide (64 characters at most): the database's
		// name goes in, hashed with the position's.
		return "SELECT GET_LOCK(CONCAT('hector-', LEFT(SHA2(CONCAT(DATABASE(), '/hector-index/', ?), 256), 50)), 0) = 1"
	}
	return ""
}

// leaders are the positions that lead in this process, by database and
// name, for databases without advisory locks.
var leaders sync.Map

type leaderKey struct {
	db   *sql.DB
	name string
}

func (p *SQL) leaderKey() leaderKey {
	sqlDB, _ := p.db.DB()
	return leaderKey{sqlDB, p.name}
}

func (p *SQL) Lead(ctx context.Context) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lock := p.serverLock()
	if lock == "" {
		if !p.held {
			_, taken := leaders.LoadOrStore(p.leaderKey(), p)
			p.held = !taken
		}
		return p.held, nil
	}
	if p.conn != nil {
		if err := p.conn.PingContext(ctx); err == nil {
			return true, nil
		}
		// The connection is gone, and the lock with it: ask again.
		p.conn.Close()
		p.conn = nil
	}
	sqlDB, err := p.db.DB()
	if err != nil {
		return false, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("index position: %w", err)
	}
	var ok bool
	err = conn.QueryRowContext(ctx, lock, p.name).Scan(&ok)
	if err != nil || !ok {
		conn.Close()
		if err != nil {
			return false, fmt.Errorf("index position: taking the lease: %w", err)
		}
		return false, nil
	}
	p.conn = conn
	return true, nil
}

func (p *SQL) Cursor(ctx context.Context) (int64, error) {
	var r row
	if err := p.db.WithContext(ctx).Where("name = ?", p.name).Take(&r).Error; err != nil {
		return 0, fmt.Errorf("index position: reading the cursor: %w", err)
	}
	return r.Cursor, nil
}

func (p *SQL) Advance(ctx context.Context, from, to int64) (bool, error) {
	defer writelock.Hold(p.db)()
	res := p.db.WithContext(ctx).Model(&row{}).Where(`name = ? AND "cursor" = ?`, p.name, from).
		Updates(map[string]any{"cursor": to, "updated_at": time.Now()})
	if res.Error != nil {
		return false, fmt.Errorf("index position: saving the cursor: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

func (p *SQL) Rewind(ctx context.Context, to int64) error {
	defer writelock.Hold(p.db)()
	err := p.db.WithContext(ctx).Model(&row{}).Where(`name = ? AND "cursor" > ?`, p.name, to).
		Updates(map[string]any{"cursor": to, "updated_at": time.Now()}).Error
	if err != nil {
		return fmt.Errorf("index position: rewinding the cursor: %w", err)
	}
	return nil
}

// Close gives up the lease.
func (p *SQL) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		leaders.CompareAndDelete(p.leaderKey(), p)
		p.held = false
	}
	if p.conn == nil {
		return nil
	}
	// Closing the connection releases the lock; unlocking first hands it
	// over at once even if the pool keeps the connection.
	unlock := "SELECT pg_advisory_unlock_all()"
	if p.db.Dialector.Name() == "mysql" {
		unlock = "SELECT RELEASE_ALL_LOCKS()"
	}
	_, err := p.conn.ExecContext(context.Background(), unlock)
	err = errors.Join(err, p.conn.Close())
	p.conn = nil
	return err
}
