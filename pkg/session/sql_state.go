package session

import (
	"encoding/json"
	"maps"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hectormem/hector/pkg/state"
)

type stateRow interface {
	appStateRow | userStateRow | sessionStateRow
	kv() (key, value string)
}

func (r appStateRow) kv() (string, string)     { return r.StateKey, r.Value }
func (r userStateRow) kv() (string, string)    { return r.StateKey, r.Value }
func (r sessionStateRow) kv() (string, string) { return r.StateKey, r.Value }

// readState returns the merged app, user and (when key.id is set) session state of key.
func readState(tx *gorm.DB, key sessionKey) (map[string]any, error) {
	out := make(map[string]any)
	if err := readRows(tx, &[]appStateRow{}, out, "app_name = ?", key.app); err != nil {
		return nil, err
	}
	if err := readRows(tx, &[]userStateRow{}, out, "app_name = ? AND user_id = ?", key.app, key.user); err != nil {
		return nil, err
	}
	if key.id != "" {
		err := readRows(tx, &[]sessionStateRow{}, out, "app_name = ? AND user_id = ? AND session_id = ?", key.app, key.user, key.id)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readRows[R stateRow](tx *gorm.DB, rows *[]R, out map[string]any, where string, args ...any) error {
	if err := tx.Where(where, args...).Find(rows).Error; err != nil {
		return err
	}
	for _, r := range *rows {
		k, raw := r.kv()
		v, err := state.Decode([]byte(raw))
		if err != nil {
			return err
		}
		out[k] = v
	}
	return nil
}

// writeState applies the stored parts of a validated delta, one row per key.
func writeState(tx *gorm.DB, key sessionKey, d state.Delta) error {
	err := upsertState(tx, d.App, []string{"app_name"},
		func(k, v string) appStateRow { return appStateRow{key.app, k, v} },
		"app_name = ?", key.app)
	if err == nil {
		err = upsertState(tx, d.User, []string{"app_name", "user_id"},
			func(k, v string) userStateRow { return userStateRow{key.app, key.user, k, v} },
			"app_name = ? AND user_id = ?", key.app, key.user)
	}
	if err == nil {
		err = upsertState(tx, d.Session, []string{"app_name", "user_id", "session_id"},
			func(k, v string) sessionStateRow { return sessionStateRow{key.app, key.user, key.id, k, v} },
			"app_name = ? AND user_id = ? AND session_id = ?", key.app, key.user, key.id)
	}
	return err
}

// upsertState writes each key of delta: nil deletes the key's row, anything
// else inserts or replaces it. Keys go in sorted order so that concurrent
// writers lock rows in the same order.
func upsertState[R stateRow](tx *gorm.DB, delta map[string]any, ownerCols []string, newRow func(key, value string) R, where string, args ...any) error {
	var (
		rows    []R
		deleted []string
	)
	for _, k := range slices.Sorted(maps.Keys(delta)) {
		v := delta[k]
		if v == nil {
			deleted = append(deleted, k)
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		rows = append(rows, newRow(k, string(raw)))
	}
	if len(deleted) > 0 {
		if err := tx.Where(where, args...).Where("state_key IN ?", deleted).Delete(new(R)).Error; err != nil {
			return err
		}
	}
	if len(rows) == 0 {
		return nil
	}
	var conflictCols []clause.Column
	for _, c := range append(ownerCols, "state_key") {
		conflictCols = append(conflictCols, clause.Column{Name: c})
	}
	return tx.Clauses(clause.OnConflict{Columns: conflictCols, DoUpdates: clause.AssignmentColumns([]string{"value"})}).Create(&rows).Error
}
