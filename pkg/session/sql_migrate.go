package session

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"gorm.io/gorm"
)

// movedColumns are the event columns that moved into the payload.
var movedColumns = []string{"invocation_id", "author", "branch"}

// movePayloadColumns moves the invocation IDs, authors and branches of the
// events a database stored as columns into their payloads, then drops the
// columns. It goes in batches, each a transaction of its own, so that a
// large database is never locked for long and an interrupted move goes on
// where it stopped. A row is rewritten only if its payload is still the one
// read, so replicas that start together never move a row twice.
func movePayloadColumns(ctx context.Context, db *gorm.DB, sqlDB *sql.DB, stmts *stmtCache) error {
	if !db.Migrator().HasColumn(&eventRow{}, movedColumns[0]) {
		return nil
	}
	const batch = 1000
	var after, moved int64
	for {
		type oldRow struct {
			cursor                     int64
			invocation, author, branch string
			payload, new               string
		}
		var rows []oldRow
		// Not through the statement cache: these statements run once.
		err := runTx(ctx, sqlDB, stmts, nil, func(t *sqlTx) error {
			rs, err := t.conn.QueryContext(ctx, stmts.text("SELECT feed_cursor, coalesce(invocation_id, ''), coalesce(author, ''), coalesce(branch, ''), payload FROM events"+
				" WHERE feed_cursor > ? AND (invocation_id <> '' OR author <> '' OR branch <> '') ORDER BY feed_cursor LIMIT ?"), after, batch)
			if err != nil {
				return err
			}
			defer rs.Close()
			for rs.Next() {
				var r oldRow
				if err := rs.Scan(&r.cursor, &r.invocation, &r.author, &r.branch, &r.payload); err != nil {
					return err
				}
				if r.new, err = withMovedFields(r.payload, r.invocation, r.author, r.branch); err != nil {
					return fmt.Errorf("event at cursor %d: %w", r.cursor, err)
				}
				rows = append(rows, r)
			}
			if err := rs.Err(); err != nil {
				return err
			}
			for _, r := range rows {
				if _, err := t.conn.ExecContext(ctx, stmts.text("UPDATE events SET payload = ?, invocation_id = NULL, author = NULL, branch = NULL WHERE feed_cursor = ? AND payload = ?"),
					r.new, r.cursor, r.payload); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			if !db.Migrator().HasColumn(&eventRow{}, movedColumns[0]) {
				return nil // a replica starting at the same time finished the move
			}
			return fmt.Errorf("moving invocation IDs, authors and branches of events into their payloads: %w", err)
		}
		if len(rows) == 0 {
			break
		}
		if moved == 0 {
			slog.Info("session: moving invocation IDs, authors and branches of stored events into their payloads (once)")
		}
		moved += int64(len(rows))
		after = rows[len(rows)-1].cursor
		if len(rows) == batch {
			slog.Info("session: moving event fields", "events_moved", moved)
		}
	}
	for _, col := range movedColumns {
		// A replica starting at the same time may have dropped it already.
		if err := db.Exec("ALTER TABLE events DROP COLUMN " + col).Error; err != nil && db.Migrator().HasColumn(&eventRow{}, col) {
			return fmt.Errorf("dropping the events column %s, now in the payload: %w", col, err)
		}
	}
	if moved > 0 {
		slog.Info("session: moved event fields into payloads", "events_moved", moved)
	}
	return nil
}

// withMovedFields returns a payload written before the invocation ID,
// author and branch moved into it, with them added. The payload itself is
// kept byte for byte: decoding and encoding it again could change values.
func withMovedFields(payload, invocation, author, branch string) (string, error) {
	rest, ok := strings.CutPrefix(payload, "{")
	if !ok {
		return "", fmt.Errorf("stored payload is not a JSON object")
	}
	fields, err := json.Marshal(struct {
		InvocationID string `json:"invocation_id,omitempty"`
		Author       string `json:"author,omitempty"`
		Branch       string `json:"branch,omitempty"`
	}{invocation, author, branch})
	if err != nil {
		return "", err
	}
	head := string(fields[:len(fields)-1]) // without its closing brace
	if !strings.HasPrefix(strings.TrimSpace(rest), "}") {
		head += ","
	}
	return head + rest, nil
}
