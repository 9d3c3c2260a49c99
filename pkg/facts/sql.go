package facts

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hectormem/hector/internal/writelock"
)

type factRow struct {
	ScopeKind  string `gorm:"primaryKey;size:16"`
	AppName    string `gorm:"primaryKey;size:128"`
	UserID     string `gorm:"primaryKey;size:128"`
	SessionID  string `gorm:"primaryKey;size:128"`
	Key        string `gorm:"column:fact_key;primaryKey;size:256"` // a key is at most 256 characters (MySQL caps a primary key at 3,072 bytes)
	Category   string `gorm:"size:64;not null"`
	Tags       string `gorm:"type:text"`
	Value      []byte `gorm:"not null"` // sealed: the database holds ciphertext only
	ValueChars int    `gorm:"not null"`
	CreatedNs  int64  `gorm:"not null"`
	UpdatedNs  int64  `gorm:"not null"`
	ExpiresNs  int64  `gorm:"not null;index"`
}

func (factRow) TableName() string { return "facts" }

type factMetaRow struct {
	Name  string `gorm:"primaryKey;size:64"`
	Value []byte
}

func (factMetaRow) TableName() string { return "facts_meta" }

type sqlStorage struct{ db *gorm.DB }

func newSQLStorage(db *gorm.DB) (*sqlStorage, error) {
	if err := db.AutoMigrate(&factRow{}, &factMetaRow{}); err != nil {
		return nil, err
	}
	return &sqlStorage{db}, nil
}

func scopeWhere(tx *gorm.DB, s Scope) *gorm.DB {
	return tx.Where("scope_kind = ? AND app_name = ? AND user_id = ? AND session_id = ?", s.Kind, s.App, s.User, s.SessionID)
}

func (q *sqlStorage) put(ctx context.Context, r record) error {
	tags, _ := json.Marshal(r.Tags)
	row := factRow{ScopeKind: r.Scope.Kind, AppName: r.Scope.App, UserID: r.Scope.User, SessionID: r.Scope.SessionID, Key: r.Key,
		Category: r.Category, Tags: string(tags), Value: r.Sealed, ValueChars: r.ValueChars,
		CreatedNs: r.CreatedAt.UnixNano(), UpdatedNs: r.UpdatedAt.UnixNano(), ExpiresNs: r.ExpiresAt.UnixNano()}
	defer writelock.Hold(q.db)()
	return q.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var old factRow
		err := scopeWhere(tx, r.Scope).Where("fact_key = ? AND expires_ns > ?", r.Key, row.UpdatedNs).Take(&old).Error
		if err == nil {
			row.CreatedNs = old.CreatedNs // the same key again: a newer value of the same fact
		} else if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error
	})
}

func (row *factRow) record() record {
	var tags []string
	json.Unmarshal([]byte(row.Tags), &tags)
	return record{Scope: Scope{Kind: row.ScopeKind, App: row.AppName, User: row.UserID, SessionID: row.SessionID},
		Key: row.Key, Category: row.Category, Tags: tags, Sealed: row.Value, ValueChars: row.ValueChars,
		CreatedAt: time.Unix(0, row.CreatedNs).UTC(), UpdatedAt: time.Unix(0, row.UpdatedNs).UTC(), ExpiresAt: time.Unix(0, row.ExpiresNs).UTC()}
}

func (q *sqlStorage) get(ctx context.Context, s Scope, key string, now time.Time) (*record, error) {
	var row factRow
	err := scopeWhere(q.db.WithContext(ctx), s).Where("fact_key = ? AND expires_ns > ?", key, now.UnixNano()).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	r := row.record()
	return &r, nil
}

// likePrefix escapes LIKE's wildcards in a key prefix.
func likePrefix(prefix string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
}

func (q *sqlStorage) list(ctx context.Context, s Scope, prefix, category string, now time.Time) ([]record, error) {
	tx := scopeWhere(q.db.WithContext(ctx), s).Where("expires_ns > ?", now.UnixNano())
	if prefix != "" {
		tx = tx.Where(`fact_key LIKE ? ESCAPE '\'`, likePrefix(prefix))
	}
	if category != "" {
		tx = tx.Where("category = ?", category)
	}
	var rows []factRow
	if err := tx.Order("updated_ns DESC, fact_key").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]record, len(rows))
	for i := range rows {
		out[i] = rows[i].record()
	}
	return out, nil
}

func (q *sqlStorage) remove(ctx context.Context, s Scope, key, category string, now time.Time) (int, error) {
	var n int64
	defer writelock.Hold(q.db)()
	err := q.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		match := func() *gorm.DB {
			t := scopeWhere(tx, s)
			if key != "" {
				t = t.Where("fact_key = ?", key)
			}
			if category != "" {
				t = t.Where("category = ?", category)
			}
			return t
		}
		if err := match().Model(&factRow{}).Where("expires_ns > ?", now.UnixNano()).Count(&n).Error; err != nil {
			return err
		}
		return match().Delete(&factRow{}).Error
	})
	return int(n), err
}

func (q *sqlStorage) usedChars(ctx context.Context, s Scope, exceptKey string, now time.Time) (int, error) {
	var total int64
	err := scopeWhere(q.db.WithContext(ctx).Model(&factRow{}), s).Where("fact_key <> ? AND expires_ns > ?", exceptKey, now.UnixNano()).
		Select("coalesce(sum(value_chars), 0)").Scan(&total).Error
	return int(total), err
}

func (q *sqlStorage) sweep(ctx context.Context, now time.Time) (int, error) {
	defer writelock.Hold(q.db)()
	res := q.db.WithContext(ctx).Where("expires_ns <= ?", now.UnixNano()).Delete(&factRow{})
	return int(res.RowsAffected), res.Error
}

func (q *sqlStorage) canary(ctx context.Context) ([]byte, error) {
	var row factMetaRow
	err := q.db.WithContext(ctx).Where("name = ?", "canary").Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	return row.Value, err
}

func (q *sqlStorage) setCanary(ctx context.Context, sealed []byte) error {
	defer writelock.Hold(q.db)()
	return q.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&factMetaRow{Name: "canary", Value: sealed}).Error
}
