package session

import (
	"context"
	"slices"

	"gorm.io/gorm"

	"github.com/hectormem/hector/internal/writelock"
)

// TombstoneEraser is a Service whose change feed can forget a user's
// deleted sessions. A tombstone names the app, user and session it
// deleted so that the index learns of the deletion; erasing a person
// removes them once the index has cleared those sessions itself, so that
// nothing names the person any more. A reader behind the feed then does
// not see those deletions, which is why only an erasure, which has
// cleared the index, may do it, and why a backend that erases tombstones
// names its Lineage (LineageReader) and counts the erasure in it: an
// index file older than the erasure is then known to be.
type TombstoneEraser interface {
	EraseTombstones(ctx context.Context, appName, userID string) (int, error)
}

// EraseTombstones removes the user's tombstones but the newest, which it
// keeps with its names blanked, and counts an erasure in the store's
// Lineage (an index file older than it is then made again): SQLite hands out the cursor after the
// highest in the feed, and a cursor handed out again would be one that
// readers have passed, so what was appended with it would never reach
// the index. Readers never see a blank tombstone; it says nothing.
func (s *SQLService) EraseTombstones(ctx context.Context, appName, userID string) (int, error) {
	defer writelock.Hold(s.db)()
	n := 0
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var newest int64
		mine := func() *gorm.DB {
			return tx.Model(&tombstoneRow{}).Where("app_name = ? AND user_id = ?", appName, userID)
		}
		if err := countErasure(tx); err != nil {
			return err
		}
		if err := mine().Select("coalesce(max(feed_cursor), 0)").Scan(&newest).Error; err != nil || newest == 0 {
			return err
		}
		res := mine().Where("feed_cursor < ?", newest).Delete(&tombstoneRow{})
		if res.Error != nil {
			return res.Error
		}
		n = int(res.RowsAffected) + 1
		return tx.Model(&tombstoneRow{}).Where("feed_cursor = ?", newest).Updates(map[string]any{"app_name": "", "user_id": "", "session_id": ""}).Error
	})
	return n, err
}

func (m *inMemoryService) EraseTombstones(ctx context.Context, appName, userID string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lineage.Erasures++
	before := len(m.feed)
	m.feed = slices.DeleteFunc(m.feed, func(c memChange) bool { return c.deleted && c.key.owner == owner{appName, userID} })
	return before - len(m.feed), nil
}

// EraseTombstones passes to the backend, when it keeps tombstones.
func (c *Cached) EraseTombstones(ctx context.Context, appName, userID string) (int, error) {
	if t, ok := c.Service.(TombstoneEraser); ok {
		return t.EraseTombstones(ctx, appName, userID)
	}
	return 0, nil
}
