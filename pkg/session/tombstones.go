package session

import (
	"context"
	"slices"

	"github.com/hectormem/hector/internal/writelock"
)

// TombstoneEraser is a Service whose change feed can forget a user's
// deleted sessions. A tombstone names the app, user and session it
// deleted so that the index learns of the deletion; erasing a person
// removes them once the index has cleared those sessions itself, so that
// nothing names the person any more. A reader behind the feed then does
// not see those deletions, which is why only an erasure, which has
// cleared the index, may do it.
type TombstoneEraser interface {
	EraseTombstones(ctx context.Context, appName, userID string) (int, error)
}

func (s *SQLService) EraseTombstones(ctx context.Context, appName, userID string) (int, error) {
	defer writelock.Hold(s.db)()
	res := s.db.WithContext(ctx).Where("app_name = ? AND user_id = ?", appName, userID).Delete(&tombstoneRow{})
	return int(res.RowsAffected), res.Error
}

func (m *inMemoryService) EraseTombstones(ctx context.Context, appName, userID string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
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
