package session

import (
	"context"
	"fmt"
	"sync"

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
	if err := s.db.WithContext(ctx).Take(&row, 1).Error; err != nil {
		return Lineage{}, fmt.Errorf("session: reading the store's lineage: %w", err)
	}
	return Lineage{StoreID: row.StoreID, Erasures: row.Erasures}, nil
}

// countErasure counts one more erasure, in the transaction that removes
// its tombstones.
func countErasure(tx *gorm.DB) error {
	return tx.Model(&lineageRow{}).Where("id = 1").Update("erasures", gorm.Expr("erasures + 1")).Error
}

// memLineage is the in-memory service's lineage: nothing outlives the
// process, but the counting is the same.
type memLineage struct {
	mu sync.Mutex
	Lineage
}

func (m *inMemoryService) Lineage(context.Context) (Lineage, error) {
	m.lineage.mu.Lock()
	defer m.lineage.mu.Unlock()
	if m.lineage.StoreID == "" {
		m.lineage.StoreID = uuid.NewString()
	}
	return m.lineage.Lineage, nil
}

// Lineage passes to the backend, which must name one.
func (c *Cached) Lineage(ctx context.Context) (Lineage, error) {
	if l, ok := c.Service.(LineageReader); ok {
		return l.Lineage(ctx)
	}
	return Lineage{}, nil
}
