package session

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Lineage is what a copy derived from a store (an index file) must match
// to be believed over it: which store it came from, and how many times the
// change feed has forgotten a person since the store was made. A copy made
// from another store, or before an erasure whose tombstones the feed no
// longer holds, cannot learn what it misses from the feed: it must be made
// again.
type Lineage struct {
	// StoreID is made once, with the store's tables.
	StoreID string
	// Erasures counts the calls to EraseTombstones.
	Erasures int64
	// Head is the highest change-feed cursor the store has handed out,
	// erased changes' included: a copy that has applied more was made from
	// a store these sessions are older than (a restored backup).
	Head int64
}

// LineageReader is a Service that names its lineage.
type LineageReader interface {
	Lineage(ctx context.Context) (Lineage, error)
}

// lineageRow is the store's one row of lineage.
type lineageRow struct {
	ID       int    `gorm:"primaryKey;autoIncrement:false"`
	StoreID  string `gorm:"size:64;not null"`
	Erasures int64  `gorm:"not null"`
}

func (lineageRow) TableName() string { return "store_lineage" }

// migrateLineage makes the row, once: a store keeps its ID for good.
func migrateLineage(db *gorm.DB) error {
	if err := db.AutoMigrate(&lineageRow{}); err != nil {
		return err
	}
	return db.Clauses(clause.OnConflict{DoNothing: true}).Create(&lineageRow{ID: 1, StoreID: uuid.NewString()}).Error
}

func (s *SQLService) Lineage(ctx context.Context) (Lineage, error) {
	var row lineageRow
	db := s.db.WithContext(ctx)
	if err := db.Take(&row, 1).Error; err != nil {
		return Lineage{}, fmt.Errorf("session: reading the store's lineage: %w", err)
	}
	lin := Lineage{StoreID: row.StoreID, Erasures: row.Erasures}
	// A blank tombstone holds the cursor of an erased person's last change.
	err := db.Raw("SELECT coalesce(max(c), 0) FROM (SELECT max(feed_cursor) AS c FROM events" +
		" UNION ALL SELECT max(feed_cursor) FROM session_tombstones) AS highest").Scan(&lin.Head).Error
	if err != nil {
		return Lineage{}, fmt.Errorf("session: reading the store's lineage: %w", err)
	}
	return lin, nil
}

// countErasure counts one more erasure, in the transaction that removes
// its tombstones.
func countErasure(tx *gorm.DB) error {
	return tx.Model(&lineageRow{}).Where("id = 1").Update("erasures", gorm.Expr("erasures + 1")).Error
}

func (m *inMemoryService) Lineage(context.Context) (Lineage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lineage.StoreID == "" { // nothing outlives the process, but the counting is the same
		m.lineage.StoreID = uuid.NewString()
	}
	lin := m.lineage
	lin.Head = m.cursor
	return lin, nil
}

// Lineage passes to the backend, which must name one.
func (c *Cached) Lineage(ctx context.Context) (Lineage, error) {
	if l, ok := c.Service.(LineageReader); ok {
		return l.Lineage(ctx)
	}
	return Lineage{}, nil
}
