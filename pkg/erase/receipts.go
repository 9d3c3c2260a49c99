package erase

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"gorm.io/gorm"

	"github.com/hectormem/hector/internal/writelock"
)

// Receipts keeps each user's latest erasure receipt, which holds counts
// and times, never content.
type Receipts interface {
	Put(ctx context.Context, r *Receipt) error
	// Latest is the user's latest receipt, nil when they were never erased.
	Latest(ctx context.Context, appName, userID string) (*Receipt, error)
	// Running lists the receipts of erasures a crash left running.
	Running(ctx context.Context) ([]*Receipt, error)
}

// NewInMemoryReceipts keeps receipts in the process.
func NewInMemoryReceipts() Receipts { return &memoryReceipts{m: map[[2]string]Receipt{}} }

type memoryReceipts struct {
	mu sync.Mutex
	m  map[[2]string]Receipt
}

// Put keeps a copy: an erasure goes on changing its receipt while others
// read the one kept (the SQL store keeps JSON, a copy too).
func (m *memoryReceipts) Put(_ context.Context, r *Receipt) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[[2]string{r.AppName, r.UserID}] = r.clone()
	return nil
}

func (m *memoryReceipts) Latest(_ context.Context, appName, userID string) (*Receipt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.m[[2]string{appName, userID}]
	if !ok {
		return nil, nil
	}
	r = r.clone()
	return &r, nil
}

func (m *memoryReceipts) Running(context.Context) ([]*Receipt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Receipt
	for _, r := range m.m {
		if r.State == StateRunning {
			r = r.clone()
			out = append(out, &r)
		}
	}
	return out, nil
}

func (r *Receipt) clone() Receipt {
	c := *r
	c.Stores = slices.Clone(r.Stores)
	return c
}

// receiptRow is a user's latest receipt, in the sessions' database.
type receiptRow struct {
	AppName string `gorm:"primaryKey;size:128"`
	UserID  string `gorm:"primaryKey;size:128"`
	State   string `gorm:"size:16;not null;default:'done';index"`
	Receipt string `gorm:"type:text;not null"` // JSON
}

func (receiptRow) TableName() string { return "erasure_receipts" }

// NewSQLReceipts keeps receipts in db (the sessions' database).
func NewSQLReceipts(db *gorm.DB) (Receipts, error) {
	if err := db.AutoMigrate(&receiptRow{}); err != nil {
		return nil, err
	}
	return &sqlReceipts{db}, nil
}

type sqlReceipts struct{ db *gorm.DB }

func (q *sqlReceipts) Put(ctx context.Context, r *Receipt) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	defer writelock.Hold(q.db)()
	return q.db.WithContext(ctx).Save(&receiptRow{AppName: r.AppName, UserID: r.UserID, State: r.State, Receipt: string(raw)}).Error
}

func (q *sqlReceipts) Running(ctx context.Context) ([]*Receipt, error) {
	var rows []receiptRow
	if err := q.db.WithContext(ctx).Where("state = ?", StateRunning).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*Receipt, len(rows))
	for i, row := range rows {
		out[i] = &Receipt{}
		if err := json.Unmarshal([]byte(row.Receipt), out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (q *sqlReceipts) Latest(ctx context.Context, appName, userID string) (*Receipt, error) {
	var row receiptRow
	err := q.db.WithContext(ctx).Where("app_name = ? AND user_id = ?", appName, userID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Receipt
	return &r, json.Unmarshal([]byte(row.Receipt), &r)
}
