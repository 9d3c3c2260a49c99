package facts

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hectormem/hector/internal/writelock"
	"github.com/hectormem/hector/pkg/sqldb"
)

// factRow is a key's current version; versionRow one of its past ones.
// The current table keeps its key as primary key, so two writers cannot
// both make a version current.
type factRow struct {
	ScopeKind   string `gorm:"primaryKey;size:16"`
	AppName     string `gorm:"primaryKey;size:128"`
	UserID      string `gorm:"primaryKey;size:128"`
	SessionID   string `gorm:"primaryKey;size:128"`
	Key         string `gorm:"column:fact_key;primaryKey;size:256"` // a key is at most 256 characters (MySQL caps a primary key at 3,072 bytes)
	ID          string `gorm:"size:36;not null;default:''"`
	Category    string `gorm:"size:64;not null"`
	Tags        string `gorm:"type:text"`
	Value       []byte `gorm:"not null"` // sealed: the database holds ciphertext only
	ValueChars  int    `gorm:"not null"`
	Source      string `gorm:"type:text"`
	Supersedes  string `gorm:"size:36;not null;default:''"`
	ContentSig  string `gorm:"size:64;not null;default:'';index"`
	EntitySig   string `gorm:"size:64;not null;default:'';index"`
	Vector      []byte // sealed, as the value is
	CreatedNs   int64  `gorm:"not null"`
	UpdatedNs   int64  `gorm:"not null"` // when this version began to hold
	ValidFromNs int64  `gorm:"not null;default:0"`
	ExpiresNs   int64  `gorm:"not null;index"`
}

func (factRow) TableName() string { return "facts" }

type versionRow struct {
	ID           string `gorm:"primaryKey;size:36"`
	ScopeKind    string `gorm:"size:16;not null;index:fact_history_key,priority:1"`
	AppName      string `gorm:"size:128;not null;index:fact_history_key,priority:2"`
	UserID       string `gorm:"size:128;not null;index:fact_history_key,priority:3"`
	SessionID    string `gorm:"size:128;not null;index:fact_history_key,priority:4"`
	Key          string `gorm:"column:fact_key;size:256;not null;index:fact_history_key,priority:5"`
	Category     string `gorm:"size:64;not null"`
	Tags         string `gorm:"type:text"`
	Value        []byte `gorm:"not null"`
	ValueChars   int    `gorm:"not null"`
	Source       string `gorm:"type:text"`
	Supersedes   string `gorm:"size:36;not null"`
	SupersededBy string `gorm:"size:36;not null"`
	Vector       []byte
	CreatedNs    int64 `gorm:"not null"`
	ValidFromNs  int64 `gorm:"not null"`
	ValidToNs    int64 `gorm:"not null"`
	ExpiresNs    int64 `gorm:"not null;index"`
}

func (versionRow) TableName() string { return "fact_history" }

type factMetaRow struct {
	Name  string `gorm:"primaryKey;size:64"`
	Value []byte
}

func (factMetaRow) TableName() string { return "facts_meta" }

type sqlStorage struct{ db *gorm.DB }

func newSQLStorage(db *gorm.DB) (*sqlStorage, error) {
	if err := db.AutoMigrate(&factRow{}, &versionRow{}, &factMetaRow{}); err != nil {
		return nil, err
	}
	q := &sqlStorage{db}
	return q, q.identify(context.Background())
}

// identify gives an ID and a start of validity to the facts written
// before versions had them.
func (q *sqlStorage) identify(ctx context.Context) error {
	var rows []factRow
	if err := q.db.WithContext(ctx).Where("id = ''").Find(&rows).Error; err != nil || len(rows) == 0 {
		return err
	}
	defer writelock.Hold(q.db)()
	return q.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, row := range rows {
			err := keyWhere(tx.Model(&factRow{}), row.scope(), row.Key).Where("id = ''").
				Updates(map[string]any{"id": uuid.NewString(), "valid_from_ns": row.UpdatedNs}).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func scopeWhere(tx *gorm.DB, s Scope) *gorm.DB {
	return tx.Where("scope_kind = ? AND app_name = ? AND user_id = ? AND session_id = ?", s.Kind, s.App, s.User, s.SessionID)
}

func keyWhere(tx *gorm.DB, s Scope, key string) *gorm.DB {
	return scopeWhere(tx, s).Where("fact_key = ?", key)
}

func encodeJSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

func currentRow(r record) factRow {
	return factRow{ScopeKind: r.Scope.Kind, AppName: r.Scope.App, UserID: r.Scope.User, SessionID: r.Scope.SessionID, Key: r.Key,
		ID: r.ID, Category: r.Category, Tags: encodeJSON(r.Tags), Value: r.Sealed, ValueChars: r.ValueChars, Source: encodeJSON(r.Source),
		Supersedes: r.Supersedes, ContentSig: r.ContentSig, EntitySig: r.EntitySig, Vector: r.Vector, CreatedNs: r.CreatedAt.UnixNano(), UpdatedNs: r.ValidFrom.UnixNano(), ValidFromNs: r.ValidFrom.UnixNano(),
		ExpiresNs: r.ExpiresAt.UnixNano()}
}

func pastRow(r record) versionRow {
	return versionRow{ID: r.ID, ScopeKind: r.Scope.Kind, AppName: r.Scope.App, UserID: r.Scope.User, SessionID: r.Scope.SessionID, Key: r.Key,
		Category: r.Category, Tags: encodeJSON(r.Tags), Value: r.Sealed, ValueChars: r.ValueChars, Source: encodeJSON(r.Source),
		Supersedes: r.Supersedes, SupersededBy: r.SupersededBy, Vector: r.Vector, CreatedNs: r.CreatedAt.UnixNano(), ValidFromNs: r.ValidFrom.UnixNano(),
		ValidToNs: r.ValidTo.UnixNano(), ExpiresNs: r.ExpiresAt.UnixNano()}
}

func (row *factRow) scope() Scope {
	return Scope{Kind: row.ScopeKind, App: row.AppName, User: row.UserID, SessionID: row.SessionID}
}

func (row *factRow) record() record {
	r := record{ID: row.ID, Scope: row.scope(), Key: row.Key, Category: row.Category, Sealed: row.Value, ValueChars: row.ValueChars,
		Supersedes: row.Supersedes, ContentSig: row.ContentSig, EntitySig: row.EntitySig, Vector: row.Vector, CreatedAt: time.Unix(0, row.CreatedNs).UTC(), ValidFrom: time.Unix(0, row.ValidFromNs).UTC(),
		ExpiresAt: time.Unix(0, row.ExpiresNs).UTC()}
	json.Unmarshal([]byte(row.Tags), &r.Tags)
	json.Unmarshal([]byte(row.Source), &r.Source)
	return r
}

func (row *versionRow) record() record {
	r := record{ID: row.ID, Scope: Scope{Kind: row.ScopeKind, App: row.AppName, User: row.UserID, SessionID: row.SessionID}, Key: row.Key,
		Category: row.Category, Sealed: row.Value, ValueChars: row.ValueChars, Supersedes: row.Supersedes, SupersededBy: row.SupersededBy, Vector: row.Vector,
		CreatedAt: time.Unix(0, row.CreatedNs).UTC(), ValidFrom: time.Unix(0, row.ValidFromNs).UTC(), ValidTo: time.Unix(0, row.ValidToNs).UTC(),
		ExpiresAt: time.Unix(0, row.ExpiresNs).UTC()}
	json.Unmarshal([]byte(row.Tags), &r.Tags)
	json.Unmarshal([]byte(row.Source), &r.Source)
	return r
}

// records are the records of rows: the past versions, then the current.
func records(cur []factRow, past []versionRow) []record {
	out := make([]record, 0, len(cur)+len(past))
	for i := range past {
		out = append(out, past[i].record())
	}
	for i := range cur {
		out = append(out, cur[i].record())
	}
	return out
}

func (q *sqlStorage) get(ctx context.Context, s Scope, key string, now time.Time) (*record, error) {
	var row factRow
	err := keyWhere(q.db.WithContext(ctx), s, key).Where("expires_ns > ?", now.UnixNano()).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	r := row.record()
	return &r, nil
}

// write runs fn in a transaction under the database's write lock.
func (q *sqlStorage) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	defer writelock.Hold(q.db)()
	return q.db.WithContext(ctx).Transaction(fn)
}

// takeCurrent deletes the key's current version if its ID is id ("" for
// an expired one), and reports whether it did.
func takeCurrent(tx *gorm.DB, s Scope, key, id string, expiredBy time.Time) (bool, error) {
	t := keyWhere(tx, s, key)
	if id != "" {
		t = t.Where("id = ?", id)
	} else {
		t = t.Where("expires_ns <= ?", expiredBy.UnixNano())
	}
	res := t.Delete(&factRow{})
	return res.RowsAffected == 1, res.Error
}

// lengthenHistory keeps a key's history as long as its newest version.
func lengthenHistory(tx *gorm.DB, s Scope, key string, expires time.Time) error {
	return keyWhere(tx.Model(&versionRow{}), s, key).Where("expires_ns < ?", expires.UnixNano()).Update("expires_ns", expires.UnixNano()).Error
}

func (q *sqlStorage) replace(ctx context.Context, prev *record, next record) error {
	return q.write(ctx, func(tx *gorm.DB) error {
		if prev != nil {
			took, err := takeCurrent(tx, next.Scope, next.Key, prev.ID, time.Time{})
			if err != nil || !took {
				return errors.Join(err, errMoved)
			}
			past := *prev
			past.ValidTo, past.SupersededBy = next.ValidFrom, next.ID
			if err := tx.Create(pointer(pastRow(past))).Error; err != nil {
				return err
			}
		} else if _, err := takeCurrent(tx, next.Scope, next.Key, "", next.ValidFrom); err != nil {
			return err
		}
		if err := lengthenHistory(tx, next.Scope, next.Key, next.ExpiresAt); err != nil {
			return err
		}
		// A current version another writer made meanwhile is a conflict on the key.
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(pointer(currentRow(next)))
		if res.Error == nil && res.RowsAffected == 0 {
			return errMoved
		}
		return res.Error
	})
}

func pointer[T any](v T) *T { return &v }

func (q *sqlStorage) end(ctx context.Context, prev record, at time.Time) error {
	return q.write(ctx, func(tx *gorm.DB) error {
		took, err := takeCurrent(tx, prev.Scope, prev.Key, prev.ID, time.Time{})
		if err != nil || !took {
			return errors.Join(err, errMoved)
		}
		prev.ValidTo = at
		return tx.Create(pointer(pastRow(prev))).Error
	})
}

func (q *sqlStorage) extend(ctx context.Context, prev record, expires time.Time) error {
	return q.write(ctx, func(tx *gorm.DB) error {
		res := keyWhere(tx.Model(&factRow{}), prev.Scope, prev.Key).Where("id = ?", prev.ID).Update("expires_ns", expires.UnixNano())
		if res.Error != nil || res.RowsAffected == 0 {
			return errors.Join(res.Error, errMoved)
		}
		return lengthenHistory(tx, prev.Scope, prev.Key, expires)
	})
}

func (q *sqlStorage) versions(ctx context.Context, s Scope, key string) ([]record, error) {
	var past []versionRow
	if err := keyWhere(q.db.WithContext(ctx), s, key).Order("valid_from_ns, valid_to_ns").Find(&past).Error; err != nil {
		return nil, err
	}
	var cur []factRow
	if err := keyWhere(q.db.WithContext(ctx), s, key).Find(&cur).Error; err != nil {
		return nil, err
	}
	return records(cur, past), nil
}

// likePrefix escapes LIKE's wildcards in a key prefix.
func likePrefix(prefix string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix) + "%"
}

// filtered narrows a query to keys under prefix and to one category.
func filtered(tx *gorm.DB, prefix, category string) *gorm.DB {
	if prefix != "" {
		tx = tx.Where(`fact_key LIKE ? ESCAPE '\'`, likePrefix(prefix))
	}
	if category != "" {
		tx = tx.Where("category = ?", category)
	}
	return tx
}

func (q *sqlStorage) list(ctx context.Context, s Scope, prefix, category string, now time.Time) ([]record, error) {
	var rows []factRow
	err := filtered(scopeWhere(q.db.WithContext(ctx), s), prefix, category).Where("expires_ns > ?", now.UnixNano()).
		Order("valid_from_ns DESC, fact_key").Find(&rows).Error
	if err != nil {
		return nil, err
	}
	return records(rows, nil), nil
}

func (q *sqlStorage) listAt(ctx context.Context, s Scope, prefix, category string, t time.Time) ([]record, error) {
	ns := t.UnixNano()
	var cur []factRow
	err := filtered(scopeWhere(q.db.WithContext(ctx), s), prefix, category).Where("valid_from_ns <= ? AND expires_ns > ?", ns, ns).Find(&cur).Error
	if err != nil {
		return nil, err
	}
	var past []versionRow
	err = filtered(scopeWhere(q.db.WithContext(ctx), s), prefix, category).
		Where("valid_from_ns <= ? AND valid_to_ns > ? AND expires_ns > ?", ns, ns, ns).Find(&past).Error
	if err != nil {
		return nil, err
	}
	out := records(cur, past)
	sortNewestFirst(out)
	return out, nil
}

// remove deletes whole keys: every version of each key whose newest
// version matches (the current one, or the last that ended).
func (q *sqlStorage) remove(ctx context.Context, s Scope, key, category string, now time.Time) (int, error) {
	var n int
	err := q.write(ctx, func(tx *gorm.DB) error {
		match := func(model any) *gorm.DB {
			t := scopeWhere(tx.Model(model), s)
			if key != "" {
				t = t.Where("fact_key = ?", key)
			}
			return t
		}
		var cur []factRow
		if err := match(&factRow{}).Find(&cur).Error; err != nil {
			return err
		}
		var ended []versionRow // the last version of keys with no current one
		if err := match(&versionRow{}).Where("superseded_by = ''").Find(&ended).Error; err != nil {
			return err
		}
		// A key's newest version decides: its current one, or the last
		// that ended.
		newest := map[string]string{} // key -> category
		slices.SortFunc(ended, func(a, b versionRow) int { return cmp.Compare(a.ValidToNs, b.ValidToNs) })
		for _, r := range ended {
			newest[r.Key] = r.Category
		}
		for _, r := range cur {
			newest[r.Key] = r.Category
			if (category == "" || r.Category == category) && r.ExpiresNs > now.UnixNano() {
				n++
			}
		}
		var keys []string
		for k, c := range newest {
			if category == "" || c == category {
				keys = append(keys, k)
			}
		}
		for len(keys) > 0 { // in batches: databases cap a statement's parameters
			batch := keys[:min(len(keys), 500)]
			keys = keys[len(batch):]
			for _, model := range []any{&factRow{}, &versionRow{}} {
				if err := scopeWhere(tx, s).Where("fact_key IN ?", batch).Delete(model).Error; err != nil {
					return err
				}
			}
		}
		return nil
	})
	return n, err
}

func (q *sqlStorage) similar(ctx context.Context, s Scope, contentSig, entitySig string, now time.Time) ([]record, error) {
	tx := scopeWhere(q.db.WithContext(ctx), s).Where("expires_ns > ?", now.UnixNano())
	if entitySig != "" {
		tx = tx.Where("content_sig = ? OR entity_sig = ?", contentSig, entitySig)
	} else {
		tx = tx.Where("content_sig = ?", contentSig)
	}
	var rows []factRow
	if err := tx.Find(&rows).Error; err != nil {
		return nil, err
	}
	return records(rows, nil), nil
}

func (q *sqlStorage) unsigned(ctx context.Context) ([]record, error) {
	var rows []factRow
	if err := q.db.WithContext(ctx).Where("content_sig = ''").Find(&rows).Error; err != nil {
		return nil, err
	}
	return records(rows, nil), nil
}

func (q *sqlStorage) sign(ctx context.Context, r record) error {
	defer writelock.Hold(q.db)()
	return keyWhere(q.db.WithContext(ctx).Model(&factRow{}), r.Scope, r.Key).Where("id = ?", r.ID).
		Updates(map[string]any{"content_sig": r.ContentSig, "entity_sig": r.EntitySig}).Error
}

func (q *sqlStorage) removeUser(ctx context.Context, app, user string) (int, error) {
	var n int
	err := q.write(ctx, func(tx *gorm.DB) error {
		for _, model := range []any{&factRow{}, &versionRow{}} {
			// An app's facts have no user: every row naming this one is theirs.
			res := tx.Where("app_name = ? AND user_id = ? AND scope_kind <> ?", app, user, ScopeApp).Delete(model)
			if res.Error != nil {
				return res.Error
			}
			n += int(res.RowsAffected)
		}
		return nil
	})
	return n, err
}

func (q *sqlStorage) restore(ctx context.Context, recs []record) error {
	return q.write(ctx, func(tx *gorm.DB) error {
		for _, r := range recs {
			var row any = pointer(pastRow(r))
			if r.current() {
				row = pointer(currentRow(r))
			}
			if err := tx.Create(row).Error; err != nil {
				return err
			}
		}
		return nil
	})
}

func (q *sqlStorage) taken(ctx context.Context, ids []string) (bool, error) {
	for chunk := range slices.Chunk(ids, 500) { // under every database's limit of bound parameters
		for _, model := range []any{&factRow{}, &versionRow{}} {
			var n int64
			if err := q.db.WithContext(ctx).Model(model).Where("id IN ?", chunk).Count(&n).Error; err != nil || n > 0 {
				return n > 0, err
			}
		}
	}
	return false, nil
}

func (q *sqlStorage) userVersions(ctx context.Context, app, user string) ([]record, error) {
	where := func() *gorm.DB {
		return q.db.WithContext(ctx).Where("app_name = ? AND user_id = ? AND scope_kind <> ?", app, user, ScopeApp)
	}
	var past []versionRow
	if err := where().Find(&past).Error; err != nil {
		return nil, err
	}
	var cur []factRow
	if err := where().Find(&cur).Error; err != nil {
		return nil, err
	}
	out := records(cur, past)
	slices.SortStableFunc(out, byScopeKeyTime)
	return out, nil
}

func (q *sqlStorage) owners(ctx context.Context, app string, after Owner, limit int) ([]Owner, error) {
	appCol, userCol := sqldb.ByteOrder(q.db, "app_name"), sqldb.ByteOrder(q.db, "user_id")
	where := "scope_kind <> ? AND (" + appCol + " > ? OR (app_name = ? AND " + userCol + " > ?))"
	args := []any{ScopeApp, after.App, after.App, after.User}
	if app != "" {
		where += " AND app_name = ?"
		args = append(args, app)
	}
	// A user's current facts counted, and users whose facts are all past
	// listed too.
	var out []Owner
	err := q.db.WithContext(ctx).Raw("SELECT app_name AS app, user_id AS user, SUM(n) AS facts FROM ("+
		"SELECT app_name, user_id, COUNT(*) AS n FROM facts WHERE "+where+" GROUP BY app_name, user_id"+
		" UNION ALL SELECT app_name, user_id, 0 AS n FROM fact_history WHERE "+where+" GROUP BY app_name, user_id"+
		") owners GROUP BY app_name, user_id ORDER BY "+appCol+", "+userCol+" LIMIT ?", append(append(args, args...), limit)...).
		Scan(&out).Error
	return out, err
}

func (q *sqlStorage) usedChars(ctx context.Context, s Scope, exceptKey string, now time.Time) (int, error) {
	var total int64
	err := scopeWhere(q.db.WithContext(ctx).Model(&factRow{}), s).Where("fact_key <> ? AND expires_ns > ?", exceptKey, now.UnixNano()).
		Select("coalesce(sum(value_chars), 0)").Scan(&total).Error
	return int(total), err
}

func (q *sqlStorage) sweep(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := q.write(ctx, func(tx *gorm.DB) error {
		for _, model := range []any{&factRow{}, &versionRow{}} {
			res := tx.Where("expires_ns <= ?", now.UnixNano()).Delete(model)
			if res.Error != nil {
				return res.Error
			}
			n += int(res.RowsAffected)
		}
		return nil
	})
	return n, err
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
