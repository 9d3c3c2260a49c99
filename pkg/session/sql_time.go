package session

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"gorm.io/gorm"
)

// Get's After without an index on the events' times. An index is a page
// every append writes; instead each session's row records whether its
// events' timestamps never went back (sessionRow.EventsInOrder). While they
// have not, the events after a time are those after the newest event not
// after it, which the sequence index finds by walking back from the newest
// event: the cost of the events asked for, not of the session's length.
// A session whose timestamps went back once is filtered event by event.

// noEventNs is a session's LastEventNs before its first event: no timestamp
// is before it.
const noEventNs = math.MinInt64

// timeOrderUpdate is what an append sets in the session's row beside its
// sequence number, with eventTimes.args as its arguments. MySQL evaluates
// the assignments from left to right, so last_event_ns is read before it is
// set, as the other databases read every column.
const timeOrderUpdate = ", events_in_order = (events_in_order AND ? AND ? >= last_event_ns)" +
	", last_event_ns = CASE WHEN ? > last_event_ns THEN ? ELSE last_event_ns END"

// eventTimes is what one append's events say of the session's time order.
type eventTimes struct {
	inOrder       bool  // each event's timestamp is at or after the one before it
	first, latest int64 // the first event's timestamp and the latest
}

func timesOf(batch []*pendingAppend) eventTimes {
	t := eventTimes{inOrder: true, first: batch[0].row.TimestampNs, latest: noEventNs}
	for i, p := range batch {
		ts := p.row.TimestampNs
		if i > 0 && ts < batch[i-1].row.TimestampNs {
			t.inOrder = false
		}
		t.latest = max(t.latest, ts)
	}
	return t
}

func (t eventTimes) args() []any { return []any{t.inOrder, t.first, t.latest, t.latest} }

// afterBound is the sequence number of a session's events after which
// all those after a time are (arguments: the time, then the session's key):
// 0 for a session whose timestamps went back, where every event is compared.
const afterBound = "SELECT CASE WHEN s.events_in_order THEN coalesce(" +
	"(SELECT e.seq FROM events e WHERE e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.id AND e.timestamp_ns <= ? ORDER BY e.seq DESC LIMIT 1)" +
	", 0) ELSE 0 END FROM sessions s WHERE s.app_name = ? AND s.user_id = ? AND s.id = ?"

// afterClause narrows a query of one session's events to those after a
// time. MariaDB does not narrow the events' range by a subquery's value
// (it scanned all 100,000 events of BenchmarkGetAfter), so on MySQL the
// bound is read first and the query narrowed by its value.
func (s *SQLService) afterClause(ctx context.Context, key sessionKey, after time.Time) (string, []any, error) {
	ns := after.UnixNano()
	boundArgs := []any{ns, key.app, key.user, key.id}
	if s.stmts.dialect != "mysql" {
		return " AND timestamp_ns > ? AND seq > (" + afterBound + ")", append([]any{ns}, boundArgs...), nil
	}
	rows, err := s.stmts.queryPool(ctx, afterBound, boundArgs...)
	if err != nil {
		return "", nil, err
	}
	defer rows.Close()
	var bound int64 // 0 when there is no session, which the query then finds
	if rows.Next() {
		err = rows.Scan(&bound)
	}
	return " AND timestamp_ns > ? AND seq > ?", []any{ns, bound}, errors.Join(err, rows.Err())
}

// recordTimeOrder fills LastEventNs and EventsInOrder of the sessions of a
// database from before they existed, from their events, once: in one
// statement, while the index on the events' times is still there to find
// each session's latest. Then that index and sessions_by_update, which
// every append wrote and nothing needs any more, go.
func recordTimeOrder(db *gorm.DB, filled bool) error {
	m := db.Migrator()
	if !filled {
		// GORM keeps the statements it prepared before the columns came
		// (it reads a table's columns with SELECT *), and SQLite's driver
		// gives a statement's columns as they were when it was prepared:
		// the next service opened on db would add the columns again.
		if p, ok := db.ConnPool.(*gorm.PreparedStmtDB); ok {
			p.Close()
		}
		slog.Info("session: recording each session's latest event time and whether its events are in time order (once)")
		err := db.Exec("UPDATE sessions SET"+
			" last_event_ns = coalesce((SELECT max(e.timestamp_ns) FROM events e WHERE e.app_name = sessions.app_name AND e.user_id = sessions.user_id AND e.session_id = sessions.id), ?),"+
			" events_in_order = NOT EXISTS (SELECT 1 FROM events a JOIN events b ON b.app_name = a.app_name AND b.user_id = a.user_id AND b.session_id = a.session_id AND b.seq = a.seq + 1"+
			" WHERE a.app_name = sessions.app_name AND a.user_id = sessions.user_id AND a.session_id = sessions.id AND b.timestamp_ns < a.timestamp_ns)"+
			// Only rows no append has touched since the columns came: a
			// replica that started after them appends meanwhile, and a row it
			// moved (last_event_ns no longer the column's default) stays as
			// that append left it, never overwritten from an older snapshot.
			" WHERE last_event_ns = 0", int64(noEventNs)).Error
		if err != nil {
			return err
		}
	}
	for _, ix := range []struct {
		model any
		name  string
	}{{&eventRow{}, "events_time"}, {&sessionRow{}, "sessions_by_update"}} {
		// A replica starting at the same time may have dropped it already.
		if m.HasIndex(ix.model, ix.name) {
			if err := m.DropIndex(ix.model, ix.name); err != nil && m.HasIndex(ix.model, ix.name) {
				return err
			}
		}
	}
	return nil
}
