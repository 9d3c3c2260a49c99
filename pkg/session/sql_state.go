package session

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hectormem/hector/pkg/state"
)

// stateTable describes one of the three state tables: its name, the
// columns that identify the owner of a key, and its write statements.
type stateTable struct {
	name   string
	owner  []string
	values func(k sessionKey) []any
	where  string
	upsert string
	// upsertMySQL is upsert in MySQL's words.
	upsertMySQL string
	delete      string
}

func newStateTable(name string, owner []string, values func(k sessionKey) []any) stateTable {
	cols := strings.Join(owner, ", ") + ", state_key"
	where := strings.Join(owner, " = ? AND ") + " = ?"
	return stateTable{
		name: name, owner: owner, values: values, where: where,
		upsert: "INSERT INTO " + name + " (" + cols + ", value) VALUES (" + strings.Repeat("?, ", len(owner)+1) + "?)" +
			" ON CONFLICT (" + cols + ") DO UPDATE SET value = excluded.value",
		upsertMySQL: "INSERT INTO " + name + " (" + cols + ", value) VALUES (" + strings.Repeat("?, ", len(owner)+1) + "?)" +
			" ON DUPLICATE KEY UPDATE value = VALUES(value)",
		delete: "DELETE FROM " + name + " WHERE " + where + " AND state_key = ?",
	}
}

var (
	appStates     = newStateTable("app_states", []string{"app_name"}, func(k sessionKey) []any { return []any{k.app} })
	userStates    = newStateTable("user_states", []string{"app_name", "user_id"}, func(k sessionKey) []any { return []any{k.app, k.user} })
	sessionStates = newStateTable("session_states", []string{"app_name", "user_id", "session_id"}, func(k sessionKey) []any { return []any{k.app, k.user, k.id} })
)

// stateRead reads the keys of some state tables in one statement: on
// PostgreSQL every statement is a round trip.
type stateRead struct {
	query  string
	tables []stateTable
}

func newStateRead(tables ...stateTable) stateRead {
	r := stateRead{tables: tables}
	r.query = r.selecting("state_key, value")
	return r
}

// selecting is r's query with columns as its select list, which ends in
// the key and value columns.
func (r stateRead) selecting(columns string) string {
	selects := make([]string, len(r.tables))
	for i, t := range r.tables {
		selects[i] = "SELECT " + columns + " FROM " + t.name + " WHERE " + t.where
	}
	return strings.Join(selects, " UNION ALL ")
}

// args are the arguments of r's query for key's owner.
func (r stateRead) args(key sessionKey) []any {
	var args []any
	for _, t := range r.tables {
		args = append(args, t.values(key)...)
	}
	return args
}

var (
	readAppState    = newStateRead(appStates)
	readUserState   = newStateRead(userStates)
	readSharedState = newStateRead(appStates, userStates)
	readMergedState = newStateRead(appStates, userStates, sessionStates)
)

// into adds the keys key's owner has in r's tables to out.
func (r stateRead) into(tx *sqlTx, key sessionKey, out map[string]any) error {
	rows, err := tx.query(r.query, r.args(key)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var raw []byte
		if err := rows.Scan(&k, &raw); err != nil {
			return err
		}
		if out[k], err = state.Decode(raw); err != nil {
			return err
		}
	}
	return rows.Err()
}

// write applies a validated delta: nil deletes a key's row, anything else
// inserts or replaces it. Keys go in sorted order so that concurrent writers
// lock rows in the same order.
func (t stateTable) write(w *sqlTx, key sessionKey, delta map[string]any) error {
	owner := t.values(key)
	for _, k := range slices.Sorted(maps.Keys(delta)) {
		var err error
		if delta[k] == nil {
			_, err = w.exec(t.delete, slices.Concat(owner, []any{k})...)
		} else {
			var raw []byte
			if raw, err = json.Marshal(delta[k]); err == nil {
				upsert := t.upsert
				if w.dialect == "mysql" {
					upsert = t.upsertMySQL
				}
				_, err = w.exec(upsert, slices.Concat(owner, []any{k, string(raw)})...)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readState returns the merged app, user and (when key.id is set) session state of key.
func readState(tx *sqlTx, key sessionKey) (map[string]any, error) {
	r := readMergedState
	if key.id == "" {
		r = readSharedState
	}
	out := make(map[string]any)
	return out, r.into(tx, key, out)
}

// deltaPart is the part of a delta one state table stores.
type deltaPart struct {
	table stateTable
	delta map[string]any
}

// storedParts splits the stored parts of d by the table that holds them.
func storedParts(d state.Delta) []deltaPart {
	return []deltaPart{{appStates, d.App}, {userStates, d.User}, {sessionStates, d.Session}}
}

// writeState applies the stored parts of a validated delta.
func writeState(w *sqlTx, key sessionKey, d state.Delta) error {
	for _, part := range storedParts(d) {
		if len(part.delta) > 0 {
			if err := part.table.write(w, key, part.delta); err != nil {
				return err
			}
		}
	}
	return nil
}

// stateWrites are the WITH queries with which PostgreSQL applies a state
// delta in the statement that appends its event (see appendAlone): per
// table, an upsert of the keys set and a delete of the keys removed, each
// given as arrays and done only if the session row was updated. Keys are
// locked in sorted order, as writeState locks them.
var stateWrites = func() string {
	var b strings.Builder
	for _, t := range readMergedState.tables {
		owner := strings.Repeat("?, ", len(t.owner))
		cols := strings.Join(t.owner, ", ") + ", state_key"
		fmt.Fprintf(&b, " set_%[1]s AS (INSERT INTO %[1]s (%[2]s, value) SELECT %[3]sk, v FROM unnest(?::text[], ?::text[]) AS d(k, v)"+
			" WHERE EXISTS (SELECT FROM next) ORDER BY k ON CONFLICT (%[2]s) DO UPDATE SET value = excluded.value),"+
			" unset_%[1]s AS (DELETE FROM %[1]s WHERE %[4]s AND state_key = ANY(?::text[]) AND EXISTS (SELECT FROM next)),",
			t.name, cols, owner, t.where)
	}
	return b.String()
}()

// appendStateArgs appends the arguments of stateWrites for d to args.
func appendStateArgs(args []any, key sessionKey, d state.Delta) ([]any, error) {
	for _, part := range storedParts(d) {
		set, values, unset := []string{}, []string{}, []string{}
		for k, v := range part.delta {
			if v == nil {
				unset = append(unset, k)
				continue
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			set, values = append(set, k), append(values, string(raw))
		}
		owner := part.table.values(key)
		args = append(append(append(args, owner...), set, values), append(owner, unset)...)
	}
	return args, nil
}
