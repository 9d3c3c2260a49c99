package session

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hectormem/hector/pkg/sqldb"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// Run with: go test -run '^$' -bench . -benchmem ./pkg/session
// (set HECTOR_TEST_POSTGRES_DSN and HECTOR_TEST_MYSQL_DSN, or use scripts/test's servers, for those rows).

type benchBackend struct {
	name string
	open func(b *testing.B) (Service, *gorm.DB)
}

var benchBackends = []benchBackend{
	{"inmemory", func(b *testing.B) (Service, *gorm.DB) { return NewInMemoryService(), nil }},
	{"sqlite", func(b *testing.B) (Service, *gorm.DB) { return openSQL(b, sqldbtest.SQLite(b)) }},
	{"postgres", func(b *testing.B) (Service, *gorm.DB) { return openSQL(b, sqldbtest.Postgres(b)) }},
	{"mysql", func(b *testing.B) (Service, *gorm.DB) { return openSQL(b, sqldbtest.MySQL(b)) }},
}

// sqliteNormal opens SQLite as Hector does but with synchronous=NORMAL:
// commits skip the fsync, so what an append costs is its CPU.
func sqliteNormal(b *testing.B) (Service, *gorm.DB) {
	path := filepath.Join(b.TempDir(), "hector.db")
	sqldbtest.SQLiteAt(b, path) // in WAL mode, which the file keeps
	db, err := gorm.Open(sqlite.Open("file:"+path+"?_synchronous=NORMAL&_busy_timeout=10000&_foreign_keys=on"),
		&gorm.Config{Logger: logger.Discard, PrepareStmt: true, SkipDefaultTransaction: true}) // as sqldb opens it
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sqldb.Close(db) })
	return openSQL(b, db)
}

func openSQL(b *testing.B, db *gorm.DB) (Service, *gorm.DB) {
	svc, err := NewSQLService(db)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Close() })
	return svc, db
}

func benchEvent(i int) *Event {
	return &Event{Author: "user", InvocationID: "inv",
		Message: NewTextMessage(RoleUser, fmt.Sprintf("message %d: what is the weather like in Paris today?", i)),
		Actions: Actions{StateDelta: map[string]any{"user:last": i}}}
}

// BenchmarkAppend appends a message; the with_state variant also writes a
// user: key, which is one more row in the same transaction.
func BenchmarkAppend(b *testing.B) {
	for _, be := range append(benchBackends, benchBackend{"sqlite_normal", sqliteNormal}) {
		for _, withState := range []bool{false, true} {
			name := be.name
			if withState {
				name += "/with_state"
			}
			b.Run(name, func(b *testing.B) {
				svc, _ := be.open(b)
				s := mustCreate(b, svc, "s")
				timedLoop(b, func(i int) {
					ev := benchEvent(i)
					if !withState {
						ev.Actions = Actions{}
					}
					if err := svc.AppendEvent(context.Background(), s, ev); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// BenchmarkSQLiteBareInsert is the floor AppendEvent on SQLite is measured
// against: one single-row INSERT committed on its own, on a database opened
// exactly like Hector's (WAL, synchronous=FULL) with the session tables in
// it. minimal_table inserts into a table with no index; events_table inserts
// the same row AppendEvent writes into the events table, indexes and all;
// with_session_row also takes the sequence number from the session's row,
// in one transaction on the service's write connection: the two writes
// every append makes, without validating, encoding or decoding the event.
func BenchmarkSQLiteBareInsert(b *testing.B) {
	for _, be := range []benchBackend{benchBackends[1], {"sqlite_normal", sqliteNormal}} {
		b.Run(be.name+"/minimal_table", func(b *testing.B) {
			_, db := be.open(b)
			if err := db.Exec("CREATE TABLE bare (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)").Error; err != nil {
				b.Fatal(err)
			}
			payload := `{"message":{"role":"user","parts":[{"type":"text","text":"message 1: what is the weather like in Paris today?"}]},"actions":{}}`
			timedLoop(b, func(int) {
				if err := db.Exec("INSERT INTO bare (payload) VALUES (?)", payload).Error; err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(be.name+"/events_table", func(b *testing.B) {
			_, db, r := bareEventRow(b, be)
			timedLoop(b, func(i int) {
				err := db.Exec("INSERT INTO events (feed_cursor, app_name, user_id, session_id, seq, event_id, timestamp_ns, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
					i, r.AppName, r.UserID, r.SessionID, i, fmt.Sprint(r.EventID, i), r.TimestampNs, r.Payload).Error
				if err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(be.name+"/with_session_row", func(b *testing.B) {
			svc, _, r := bareEventRow(b, be)
			timedLoop(b, func(i int) {
				err := svc.writer.transaction(func(w *sqlTx) error {
					seq, _, err := w.returning("UPDATE sessions SET last_seq = last_seq + 1, updated_ns = ? WHERE app_name = ? AND user_id = ? AND id = ? RETURNING last_seq",
						r.TimestampNs+int64(i), r.AppName, r.UserID, r.SessionID) // moves the row in sessions_by_update, as an append does
					if err == nil {
						_, err = w.exec("INSERT INTO events (feed_cursor, app_name, user_id, session_id, seq, event_id, timestamp_ns, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
							i, r.AppName, r.UserID, r.SessionID, seq, fmt.Sprint(r.EventID, i), r.TimestampNs, r.Payload)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// timedLoop runs op(1), op(2), ... as b's loop and reports the median and
// the 99th percentile of one call beside the mean: SQLite copies its
// write-ahead log into the database every thousand pages or so, a pause
// that one append in hundreds pays and the mean spreads over all of them.
func timedLoop(b *testing.B, op func(i int)) {
	var took []time.Duration
	for i := 1; b.Loop(); i++ {
		began := time.Now()
		op(i)
		took = append(took, time.Since(began))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
}

// bareEventRow opens be with a session in it, and returns the row an
// append of BenchmarkAppend's event would store.
func bareEventRow(b *testing.B, be benchBackend) (*SQLService, *gorm.DB, eventRow) {
	svc, db := be.open(b)
	s := mustCreate(b, svc, "s")
	ev := benchEvent(1)
	ev.Actions = Actions{}
	p, err := svc.(*SQLService).prepareAppend(s, ev, nil)
	if err != nil {
		b.Fatal(err)
	}
	return svc.(*SQLService), db, p.row
}

func BenchmarkGetRecent100(b *testing.B) {
	for _, be := range benchBackends {
		for _, total := range []int{100, 100_000} {
			b.Run(fmt.Sprintf("%s/of_%d", be.name, total), func(b *testing.B) {
				svc, db := be.open(b)
				s := mustCreate(b, svc, "s")
				bulkAppend(b, svc, db, s, total)
				req := &GetRequest{AppName: s.AppName(), UserID: s.UserID(), SessionID: s.ID(), NumRecentEvents: 100}
				for b.Loop() {
					resp, err := svc.Get(context.Background(), req)
					if err != nil {
						b.Fatal(err)
					}
					if n := resp.Session.Events().Len(); n != 100 {
						b.Fatalf("got %d events, want 100", n)
					}
				}
			})
		}
	}
}

// BenchmarkGetRecent100FromARequest loads the last 100 of 1,000 events
// with a context that can be cancelled, as an HTTP request's, which SQLite's
// driver reads differently from context.Background's (see SQLService.read).
func BenchmarkGetRecent100FromARequest(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			svc, db := be.open(b)
			s := mustCreate(b, svc, "s")
			bulkAppend(b, svc, db, s, 1000)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := &GetRequest{AppName: s.AppName(), UserID: s.UserID(), SessionID: s.ID(), NumRecentEvents: 100}
			for b.Loop() {
				if _, err := svc.Get(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetAfter loads the events after a time, the last 10 of a
// session's, with no NumRecentEvents: what a client polling for new events
// asks.
func BenchmarkGetAfter(b *testing.B) {
	for _, be := range benchBackends {
		for _, total := range []int{100, 100_000} {
			b.Run(fmt.Sprintf("%s/of_%d", be.name, total), func(b *testing.B) {
				svc, db := be.open(b)
				s := mustCreate(b, svc, "s")
				after := bulkAppend(b, svc, db, s, total)[total-11].TimestampNs
				req := &GetRequest{AppName: s.AppName(), UserID: s.UserID(), SessionID: s.ID(), After: time.Unix(0, after)}
				for b.Loop() {
					resp, err := svc.Get(context.Background(), req)
					if err != nil {
						b.Fatal(err)
					}
					if n := resp.Session.Events().Len(); n != 10 {
						b.Fatalf("got %d events, want 10", n)
					}
				}
			})
		}
	}
}

// BenchmarkList reads the first page of a user's 1,000 sessions, newest
// created first and (by_update) last updated first.
func BenchmarkList(b *testing.B) {
	for _, be := range benchBackends {
		for _, byUpdate := range []bool{false, true} {
			name := be.name
			if byUpdate {
				name += "/by_update"
			}
			b.Run(name, func(b *testing.B) { benchList(b, be, byUpdate) })
		}
	}
}

func benchList(b *testing.B, be benchBackend, byUpdate bool) {
	svc, _ := be.open(b)
	for i := range 1000 {
		mustCreate(b, svc, fmt.Sprintf("s%04d", i))
	}
	for b.Loop() {
		resp, err := svc.List(context.Background(), &ListRequest{AppName: "app", UserID: "u", PageSize: 50, ByUpdate: byUpdate})
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.Sessions) != 50 {
			b.Fatalf("got %d sessions, want 50", len(resp.Sessions))
		}
	}
}

func mustCreate(b *testing.B, svc Service, id string) Session {
	resp, err := svc.Create(context.Background(), &CreateRequest{AppName: "app", UserID: "u", SessionID: id, State: map[string]any{"user:name": "Ann"}})
	if err != nil {
		b.Fatal(err)
	}
	return resp.Session
}

// bulkAppend fills a session with n events quickly. Rows are made by the
// same prepareAppend that AppendEvent uses, but written in batches: loading
// 100,000 events one transaction each would dominate the benchmark's time.
func bulkAppend(b *testing.B, svc Service, db *gorm.DB, s Session, n int) []eventRow {
	base := time.Now().Add(-time.Duration(n) * time.Second)
	rows := make([]eventRow, 0, n)
	for i := range n {
		ev := benchEvent(i)
		ev.Timestamp = base.Add(time.Duration(i) * time.Second)
		p, err := svc.(interface {
			prepareAppend(Session, *Event, []AppendOption) (*pendingAppend, error)
		}).prepareAppend(s, ev, nil)
		if err != nil {
			b.Fatal(err)
		}
		p.row.Seq, p.row.Cursor = int64(i+1), int64(i+1)
		rows = append(rows, p.row)
	}
	switch svc := svc.(type) {
	case *inMemoryService:
		key := sessionKey{owner{s.AppName(), s.UserID()}, s.ID()}
		stored := svc.session(key)
		stored.events = rows
		stored.decoded = make([]*Event, n) // as appends leave them
		for i := range rows {
			ev, err := rows[i].event()
			if err != nil {
				b.Fatal(err)
			}
			stored.decoded[i] = ev
		}
		svc.cursor = int64(n)
	case *SQLService:
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := tx.CreateInBatches(rows, 1000).Error; err != nil {
				return err
			}
			if err := tx.Model(&sessionRow{}).Where("id = ?", s.ID()).Updates(map[string]any{"last_seq": n, "last_event_ns": rows[n-1].TimestampNs}).Error; err != nil {
				return err
			}
			switch db.Dialector.Name() {
			case "sqlite":
				return nil // its next cursor follows the highest stored
			case "postgres":
				return tx.Exec("SELECT setval('hector_feed_cursor', ?)", n).Error
			}
			return tx.Model(&feedHeadRow{}).Where("id = 1").Update("last_cursor", n).Error
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return rows
}

// BenchmarkGetRecent100Cached is BenchmarkGetRecent100's hot case through
// a Cached service: the same Get, served from the cache after the first.
func BenchmarkGetRecent100Cached(b *testing.B) {
	for _, be := range benchBackends {
		for _, cached := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/cached=%v", be.name, cached), func(b *testing.B) {
				svc, db := be.open(b)
				s := mustCreate(b, svc, "s")
				bulkAppend(b, svc, db, s, 1000)
				if cached {
					svc = NewCached(svc, 100)
				}
				req := &GetRequest{AppName: s.AppName(), UserID: s.UserID(), SessionID: s.ID(), NumRecentEvents: 100}
				for b.Loop() {
					resp, err := svc.Get(context.Background(), req)
					if err != nil {
						b.Fatal(err)
					}
					if n := resp.Session.Events().Len(); n != 100 {
						b.Fatalf("got %d events, want 100", n)
					}
				}
			})
		}
	}
}
