package session

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hectormem/hector/internal/writelock"
	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/state"
	"github.com/hectormem/hector/pkg/telemetry"
)

// SQLService stores sessions in a SQL database through GORM: SQLite (see
// sqldb.OpenSQLite) or PostgreSQL (sqldb.OpenPostgres).
type SQLService struct {
	limits
	db     *gorm.DB
	sqlDB  *sql.DB
	stmts  *stmtCache
	sqlite bool
	// group shares transactions among concurrent writes on SQLite, which
	// has one writer at a time: queueing writers here is fair and cheap
	// (SQLite's busy handler makes them sleep and retry), and a group's one
	// commit is one fsync for all. PostgreSQL and MySQL run writes in
	// transactions of their own, on connections of their own, and group
	// their commits' log flushes themselves: a group there would only put
	// every statement of every write on one connection, one round trip
	// after another (measured 4x slower at 8 writers).
	group  groupCommit
	writer *sqliteWriter // SQLite's write connection
}

var _ Service = (*SQLService)(nil)

// NewSQLService returns a Service on db, creating or updating its tables.
// Close it before db: on SQLite it holds the connection writes go through.
func NewSQLService(db *gorm.DB, opts ...Option) (*SQLService, error) {
	if db == nil {
		return nil, errors.New("session: NewSQLService needs a database: open one with sqldb.Open")
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	sqlite := db.Dialector.Name() == "sqlite"
	if max := sqlDB.Stats().MaxOpenConnections; sqlite && max == 1 {
		return nil, errors.New("session: a SQLite pool of one connection leaves none to read with beside the one writes hold: allow two or more (sqldb.OpenSQLite sets no bound)")
	}
	stmts := &stmtCache{db: sqlDB, dialect: db.Dialector.Name(), stmts: make(map[string]*sql.Stmt), pending: make(map[string]bool)}
	// Before the tables are migrated: GORM's migrator caches statements
	// that read every column, which PostgreSQL refuses to run once columns
	// are gone.
	if err := movePayloadColumns(context.Background(), db, sqlDB, stmts); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	m := db.Migrator()
	timesFilled := !m.HasTable(&sessionRow{}) || m.HasColumn(&sessionRow{}, "events_in_order")
	err = db.AutoMigrate(&sessionRow{}, &eventRow{}, &appStateRow{}, &userStateRow{}, &sessionStateRow{}, &tombstoneRow{})
	if err == nil {
		err = recordTimeOrder(db, timesFilled)
	}
	if err == nil {
		err = migrateLineage(db)
	}
	if err == nil && !sqlite { // see insertWithCursor
		err = db.AutoMigrate(&feedHeadRow{})
		if err == nil {
			err = db.Clauses(clause.OnConflict{DoNothing: true}).Create(&feedHeadRow{ID: 1}).Error
		}
	}
	if err == nil && db.Dialector.Name() == "postgres" {
		err = db.Exec("CREATE SEQUENCE IF NOT EXISTS hector_feed_cursor").Error
		if err == nil { // a database whose cursors came from change_feed_head goes on past them
			err = db.Exec("SELECT setval('hector_feed_cursor', h.last_cursor) FROM change_feed_head h, hector_feed_cursor s" +
				" WHERE h.id = 1 AND h.last_cursor > 0 AND h.last_cursor >= s.last_value").Error
		}
	}
	if err != nil {
		return nil, fmt.Errorf("session: creating the session tables: %w", err)
	}
	s := &SQLService{limits: newLimits(opts), db: db, sqlDB: sqlDB, sqlite: sqlite, stmts: stmts}
	if sqlite {
		s.writer = &sqliteWriter{db: sqlDB, mu: writelock.Of(sqlDB)}
	}
	return s, nil
}

// Close releases what the service holds on db: its prepared statements
// (waiting for those being prepared in the background) and SQLite's write
// connection. Use the service no more afterwards (on SQLite, writes fail
// with ErrClosed). It does not close db, which the caller opened.
func (s *SQLService) Close() error {
	err := s.stmts.close()
	if s.writer != nil {
		err = errors.Join(err, s.writer.close())
	}
	return err
}

// write runs fn in a transaction (on SQLite shared with the writes that
// arrive meanwhile, each in a savepoint of its own), retrying the transient
// failures PostgreSQL and MySQL report when concurrent transactions deadlock.
func (s *SQLService) write(ctx context.Context, fn func(w *sqlTx) error) error {
	return retryTransient(func() error {
		if s.sqlite {
			return s.group.run(ctx, s.writer, fn)
		}
		return runTx(ctx, s.sqlDB, s.stmts, nil, fn)
	})
}

// retryTransient runs fn, five times at most, while it fails as isTransient says.
func retryTransient(fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if attempt == 5 || !isTransient(err) {
			return err
		}
	}
}

func isTransient(err error) bool {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) {
		code := pgErr.SQLState()
		return code == "40001" || code == "40P01" // serialization_failure, deadlock_detected
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number == 1213 || myErr.Number == 1205 // deadlock, lock wait timeout
	}
	return false
}

// read runs fn on one consistent snapshot of the database.
func (s *SQLService) read(ctx context.Context, fn func(t *sqlTx) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if !s.sqlite { // a SQLite read transaction is already a snapshot
		opts.Isolation = sql.LevelRepeatableRead
	} else {
		// Given a context that can be cancelled (a request's), SQLite's
		// driver reads every row on a goroutine of its own to watch it:
		// loading 100 events took a quarter longer
		// (BenchmarkGetRecent100FromARequest). A read here is one
		// session, one page or one scope's state, so once begun it runs to
		// its end, and a cancelled caller is refused before it begins.
		if err := ctx.Err(); err != nil {
			return err
		}
		ctx = context.WithoutCancel(ctx)
	}
	return runTx(ctx, s.sqlDB, s.stmts, opts, fn)
}

// readCommitted runs fn in a transaction whose locking reads see the
// latest committed rows (see Changes on MySQL), again if it deadlocked
// with a deletion (whose locks it may hold one of, waiting on another).
func (s *SQLService) readCommitted(ctx context.Context, fn func(t *sqlTx) error) error {
	return retryTransient(func() error {
		return runTx(ctx, s.sqlDB, s.stmts, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, fn)
	})
}

func (s *SQLService) Create(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
	key, d, err := s.checkCreate(req)
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	var shared map[string]any
	err = s.write(ctx, func(w *sqlTx) error {
		insert := "INSERT INTO sessions (app_name, user_id, id, created_ns, updated_ns, last_seq, title, last_event_ns, events_in_order) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?)"
		if w.dialect != "mysql" {
			insert += " ON CONFLICT DO NOTHING"
		}
		n, err := w.exec(insert, key.app, key.user, key.id, now, now, req.Title, noEventNs, true)
		if s.isDuplicateKey(err) { // MySQL's way; its transaction goes on
			n, err = 0, nil
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return alreadyExists(key)
		}
		if err := writeState(w, key, d); err != nil {
			return err
		}
		// The app and user state the new session starts with, in the same transaction.
		shared, err = readState(w, sessionKey{owner: key.owner})
		return err
	})
	if err != nil {
		return nil, err
	}
	h := s.newHandle(key, state.Merge(shared, d.Session, d.Temp), nil, 0, now)
	h.title = req.Title
	return &CreateResponse{Session: h}, nil
}

func (s *SQLService) Get(ctx context.Context, req *GetRequest) (*GetResponse, error) {
	key, err := checkGet(req)
	if err != nil {
		return nil, err
	}
	if !s.sqlite {
		return s.getInOneStatement(ctx, key, req)
	}
	var (
		updatedNs, lastSeq int64
		title              string
		rows               []eventRow
		merged             map[string]any
	)
	err = s.read(ctx, func(t *sqlTx) error {
		found, err := t.scanRow("SELECT updated_ns, last_seq, title FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
			[]any{key.app, key.user, key.id}, &updatedNs, &lastSeq, &title)
		if err != nil {
			return err
		}
		if !found {
			return notFound(key)
		}
		q := "SELECT " + sessionEventColumns + " FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?"
		args := []any{key.app, key.user, key.id}
		if !req.After.IsZero() {
			clause, more, err := s.afterClause(t.ctx, key, req.After)
			if err != nil {
				return err
			}
			q, args = q+clause, append(args, more...)
		}
		if req.BeforeSeq > 0 {
			q += " AND seq < ?"
			args = append(args, req.BeforeSeq)
		}
		if req.NumRecentEvents > 0 {
			// Newest first with a limit walks the primary key backwards: the
			// cost depends on the events asked for, not on the session's length.
			q += " ORDER BY seq DESC LIMIT ?"
			args = append(args, req.NumRecentEvents)
		} else {
			q += " ORDER BY seq"
		}
		if rows, err = t.events(&key, q, args...); err != nil {
			return err
		}
		if req.NumRecentEvents > 0 {
			slices.Reverse(rows)
		}
		merged, err = readState(t, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	events, err := eventsFromRows(rows)
	if err != nil {
		return nil, err
	}
	h := s.newHandle(key, merged, events, lastSeq, updatedNs)
	h.title = title
	return &GetResponse{Session: h}, nil
}

// getInOneStatement is Get on PostgreSQL and MySQL: the session's row, its
// events and its merged state come back as rows of one statement, told
// apart by their first column. One statement reads one snapshot, as the
// transaction Get runs on SQLite does, in one round trip instead of five
// (BEGIN, three queries, COMMIT).
func (s *SQLService) getInOneStatement(ctx context.Context, key sessionKey, req *GetRequest) (*GetResponse, error) {
	const ( // a row's first column: what it holds
		rowIsSession = 0
		rowIsEvent   = 1
		rowIsState   = 2
	)
	// The union's members are plain queries, none a derived table: MySQL
	// would copy such a table's rows, payloads and all, to a temporary
	// table on disk first (measured 2.5x slower on MariaDB).
	q := "SELECT 0, updated_ns, last_seq, 0, title, '' FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?" +
		" UNION ALL (SELECT 1, feed_cursor, seq, timestamp_ns, event_id, payload FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?"
	args := []any{key.app, key.user, key.id, key.app, key.user, key.id}
	if !req.After.IsZero() {
		clause, more, err := s.afterClause(ctx, key, req.After)
		if err != nil {
			return nil, err
		}
		q, args = q+clause, append(args, more...)
	}
	if req.BeforeSeq > 0 {
		q += " AND seq < ?"
		args = append(args, req.BeforeSeq)
	}
	if req.NumRecentEvents > 0 {
		q += " ORDER BY seq DESC LIMIT ?" // walks the primary key backwards, as on SQLite
		args = append(args, req.NumRecentEvents)
	}
	q += ") UNION ALL " + readMergedState.selecting("2, 0, 0, 0, state_key, value")
	args = append(args, readMergedState.args(key)...)
	rows, err := s.stmts.queryPool(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		found              bool
		updatedNs, lastSeq int64
		title              string
		stored             []eventRow
		merged             = make(map[string]any)
		kind               int
		n1, n2, n3         int64
		s1, s2             string
	)
	for rows.Next() {
		if err := rows.Scan(&kind, &n1, &n2, &n3, &s1, &s2); err != nil {
			return nil, err
		}
		switch kind {
		case rowIsSession:
			found, updatedNs, lastSeq, title = true, n1, n2, s1
		case rowIsEvent:
			stored = append(stored, eventRow{Cursor: n1, Seq: n2, TimestampNs: n3, EventID: s1, Payload: longText(s2),
				AppName: key.app, UserID: key.user, SessionID: key.id})
		case rowIsState:
			if merged[s1], err = state.Decode([]byte(s2)); err != nil {
				return nil, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, notFound(key)
	}
	// A union's rows come in no promised order.
	bySeq := func(a, b eventRow) int { return cmp.Compare(a.Seq, b.Seq) }
	if !slices.IsSortedFunc(stored, bySeq) {
		slices.SortFunc(stored, bySeq)
	}
	evs, err := eventsFromRows(stored)
	if err != nil {
		return nil, err
	}
	h := s.newHandle(key, merged, evs, lastSeq, updatedNs)
	h.title = title
	return &GetResponse{Session: h}, nil
}

// The columns of an event that sqlTx.events reads: of one session's events,
// whose owner the caller knows, or of anyone's. Every column costs a Get of
// 100 events a hundred calls into SQLite.
const (
	sessionEventColumns = "feed_cursor, seq, event_id, timestamp_ns, payload"
	eventColumns        = "app_name, user_id, session_id, " + sessionEventColumns
)

// events runs a query for sessionEventColumns of key's events, or for
// eventColumns when key is nil.
func (w *sqlTx) events(key *sessionKey, query string, args ...any) ([]eventRow, error) {
	rows, err := w.query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// One set of scan targets for all the rows: a Get scans hundreds, and
	// fresh targets per row were a sixth of its allocations.
	var (
		r       eventRow
		payload string // database/sql converts to a string type without reflection
	)
	cols := []any{&r.Cursor, &r.Seq, &r.EventID, &r.TimestampNs, &payload}
	if key == nil {
		cols = append([]any{&r.AppName, &r.UserID, &r.SessionID}, cols...)
	} else {
		r.AppName, r.UserID, r.SessionID = key.app, key.user, key.id
	}
	var out []eventRow
	for rows.Next() {
		if err := rows.Scan(cols...); err != nil {
			return nil, err
		}
		r.Payload = longText(payload)
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *SQLService) List(ctx context.Context, req *ListRequest) (*ListResponse, error) {
	o, size, from, err := checkList(req)
	if err != nil {
		return nil, err
	}
	var (
		rows       []sessionRow
		shared     map[string]any
		perSession = make(map[string]map[string]any)
	)
	err = s.read(ctx, func(t *sqlTx) error {
		q := "SELECT id, created_ns, updated_ns, last_seq, title FROM sessions WHERE app_name = ? AND user_id = ?"
		args := []any{o.app, o.user}
		by := "created_ns"
		if req.ByUpdate {
			by = "updated_ns"
		}
		if from != nil {
			q += " AND (" + by + " < ? OR (" + by + " = ? AND id < ?))"
			args = append(args, from.Ns, from.Ns, from.ID)
		}
		var err error
		if rows, err = t.sessions(q+" ORDER BY "+by+" DESC, id DESC LIMIT ?", append(args, size+1)...); err != nil || len(rows) == 0 {
			return err
		}
		if shared, err = readState(t, sessionKey{owner: o}); err != nil {
			return err
		}
		ids := make([]any, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		states, err := t.queryOnce("SELECT session_id, state_key, value FROM session_states WHERE app_name = ? AND user_id = ? AND session_id IN (?"+
			strings.Repeat(", ?", len(ids)-1)+")", append([]any{o.app, o.user}, ids...)...)
		if err != nil {
			return err
		}
		defer states.Close()
		for states.Next() {
			var id, k, v string
			if err := states.Scan(&id, &k, &v); err != nil {
				return err
			}
			if perSession[id] == nil {
				perSession[id] = make(map[string]any)
			}
			if perSession[id][k], err = state.Decode([]byte(v)); err != nil {
				return err
			}
		}
		return states.Err()
	})
	if err != nil {
		return nil, err
	}
	resp := &ListResponse{}
	if len(rows) > size {
		rows = rows[:size]
		last, ns := rows[size-1], rows[size-1].CreatedNs
		if req.ByUpdate {
			ns = last.UpdatedNs
		}
		resp.NextPageToken = listPosition{ns, last.ID, req.ByUpdate}.token()
	}
	for _, r := range rows {
		key := sessionKey{o, r.ID}
		h := s.newHandle(key, state.Merge(shared, perSession[r.ID]), nil, r.LastSeq, r.UpdatedNs)
		h.title = r.Title
		resp.Sessions = append(resp.Sessions, h)
	}
	return resp, nil
}

func (s *SQLService) Delete(ctx context.Context, req *DeleteRequest) error {
	key, err := checkDelete(req)
	if err != nil {
		return err
	}
	return s.cascadeDelete(ctx, req, func() error { return s.delete(ctx, key) })
}

func (s *SQLService) delete(ctx context.Context, key sessionKey) error {
	return s.write(ctx, func(w *sqlTx) error {
		// The tombstone goes in before the events go out: on SQLite the next
		// cursor is derived from the highest one still stored.
		if _, err := insertWithCursor(w, "session_tombstones (feed_cursor, app_name, user_id, session_id)", key.app, key.user, key.id); err != nil {
			return err
		}
		n, err := w.exec("DELETE FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?", key.app, key.user, key.id)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound(key)
		}
		for _, table := range []string{"events", "session_states"} {
			if _, err := w.exec("DELETE FROM "+table+" WHERE app_name = ? AND user_id = ? AND session_id = ?", key.app, key.user, key.id); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *SQLService) SetTitle(ctx context.Context, req *SetTitleRequest) error {
	key, err := checkSetTitle(req)
	if err != nil {
		return err
	}
	return s.write(ctx, func(w *sqlTx) error {
		// A title is no event: the session's update time stays what it was.
		n, err := w.exec("UPDATE sessions SET title = ? WHERE app_name = ? AND user_id = ? AND id = ?", req.Title, key.app, key.user, key.id)
		if err == nil && n == 0 {
			// MySQL counts the rows changed, not those matched: a title set again changes none.
			var exists int
			found, serr := w.scanRow("SELECT 1 FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?", []any{key.app, key.user, key.id}, &exists)
			if serr != nil {
				return serr
			}
			if !found {
				return notFound(key)
			}
		}
		return err
	})
}

func (s *SQLService) AppendEvent(ctx context.Context, sess Session, ev *Event, opts ...AppendOption) error {
	return s.AppendEvents(ctx, sess, []*Event{ev}, opts...)
}

// appendOneOnPostgres appends one event in one statement (appendAlone).
func (s *SQLService) appendOneOnPostgres(ctx context.Context, sess Session, ev *Event, opts []AppendOption) error {
	p, err := s.prepareAppend(sess, ev, opts)
	if err != nil || p == nil {
		return err
	}
	now := time.Now()
	var seq, cursor int64
	err = retryTransient(func() (err error) {
		seq, cursor, err = s.appendAlone(ctx, p, now)
		return err
	})
	if err != nil {
		return err
	}
	return p.finish(ev, seq, cursor, now)
}

func (s *SQLService) AppendEvents(ctx context.Context, sess Session, evs []*Event, opts ...AppendOption) (err error) {
	ctx, span := telemetry.Span(ctx, "session.append", attribute.String("db.system.name", s.stmts.dialect), attribute.Int("hector.events", len(evs)))
	defer func() { telemetry.End(span, err) }()
	if len(evs) == 1 && s.stmts.dialect == "postgres" {
		return s.appendOneOnPostgres(ctx, sess, evs[0], opts)
	}
	batch, err := s.prepareBatch(sess, evs, opts)
	if err != nil || len(batch) == 0 {
		return err
	}
	key, o := batch[0].key, batch[0].opts
	now := time.Now()
	var first int64
	cursors := make([]int64, len(batch))
	err = s.write(ctx, func(w *sqlTx) error {
		// Taking the sequence numbers locks the session's row until commit:
		// appends to one session are serialised, never interleaved.
		n := len(batch)
		next := "last_seq + " + strconv.Itoa(n)
		if w.dialect == "mysql" { // which LAST_INSERT_ID then hands back
			next = "LAST_INSERT_ID(" + next + ")"
		}
		times := timesOf(batch)
		q := "UPDATE sessions SET last_seq = " + next + ", updated_ns = ?" + timeOrderUpdate + " WHERE app_name = ? AND user_id = ? AND id = ?"
		args := append([]any{now.UnixNano()}, times.args()...)
		args = append(args, key.app, key.user, key.id)
		if o.expectSeq != nil {
			q += " AND last_seq = ?"
			args = append(args, *o.expectSeq)
		}
		var last int64
		var ok bool
		var err error
		if w.dialect == "mysql" {
			var rows int64
			rows, last, err = w.execID(q, args...)
			ok = rows == 1
		} else {
			last, ok, err = w.returning(q+" RETURNING last_seq", args...)
		}
		if err != nil {
			return err
		}
		if !ok {
			actual, exists, err := w.returning(lastSeqOf, key.app, key.user, key.id)
			return notAppended(key, o.expectSeq, actual, exists, err)
		}
		first = last - int64(n) + 1
		for i, p := range batch {
			if err := writeState(w, key, p.delta); err != nil {
				return err
			}
			// The cursor comes last: on PostgreSQL its lock is then held only for the inserts and the commit.
			r := p.row
			cursors[i], err = insertWithCursor(w, "events (feed_cursor, app_name, user_id, session_id, seq, event_id, timestamp_ns, payload)",
				r.AppName, r.UserID, r.SessionID, first+int64(i), r.EventID, r.TimestampNs, r.Payload)
			if s.isDuplicateKey(err) { // the only unique key a fresh sequence number and cursor can break
				return eventExists(key, r.EventID)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return finishBatch(batch, evs, first, cursors, now)
}

const lastSeqOf = "SELECT last_seq FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?"

// notAppended says why an append found no session row to take a sequence
// number from, given the session's last_seq read afterwards.
func notAppended(key sessionKey, expectSeq *int64, actual int64, exists bool, err error) error {
	switch {
	case err != nil:
		return err
	case !exists:
		return notFound(key)
	}
	return conflict(key, *expectSeq, actual)
}

// appendAlone appends an event and applies its state delta on PostgreSQL
// in one statement, which commits on its own: one round trip instead of
// four or more (BEGIN, UPDATE, a statement per state key, INSERT, COMMIT),
// the difference between waiting on the network and on the disk when
// appends arrive concurrently. The session row and the cursor are taken as
// the multi-statement append takes them, and the state is written only
// when the session row was.
func (s *SQLService) appendAlone(ctx context.Context, p *pendingAppend, now time.Time) (seq, cursor int64, err error) {
	key, r := p.key, p.row
	where := "app_name = ? AND user_id = ? AND id = ?"
	args := append([]any{now.UnixNano()}, timesOf([]*pendingAppend{p}).args()...)
	args = append(args, key.app, key.user, key.id)
	if p.opts.expectSeq != nil {
		where += " AND last_seq = ?"
		args = append(args, *p.opts.expectSeq)
	}
	q := "WITH next AS (UPDATE sessions SET last_seq = last_seq + 1, updated_ns = ?" + timeOrderUpdate + " WHERE " + where + " RETURNING last_seq),"
	if d := p.delta; len(d.App)+len(d.User)+len(d.Session) > 0 {
		q += stateWrites
		if args, err = appendStateArgs(args, key, d); err != nil {
			return 0, 0, err
		}
	}
	q += " in_flight AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(" + feedLock + "))" +
		" INSERT INTO events (feed_cursor, app_name, user_id, session_id, seq, event_id, timestamp_ns, payload)" +
		" SELECT (SELECT nextval('hector_feed_cursor') FROM in_flight), ?, ?, ?, last_seq, ?, ?, ? FROM next RETURNING seq, feed_cursor"
	args = append(args, r.AppName, r.UserID, r.SessionID, r.EventID, r.TimestampNs, r.Payload)
	// No statement cache: the driver prepares and keeps statements per connection.
	err = s.sqlDB.QueryRowContext(ctx, s.stmts.text(q), args...).Scan(&seq, &cursor)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		var actual int64
		err = s.sqlDB.QueryRowContext(ctx, s.stmts.text(lastSeqOf), key.app, key.user, key.id).Scan(&actual)
		exists := !errors.Is(err, sql.ErrNoRows)
		if !exists {
			err = nil
		}
		return 0, 0, notAppended(key, p.opts.expectSeq, actual, exists, err)
	case s.isDuplicateKey(err):
		return 0, 0, eventExists(key, r.EventID)
	}
	return seq, cursor, err
}

func (s *SQLService) AppState(ctx context.Context, appName string) (map[string]any, error) {
	if err := ident.Check("app name", appName); err != nil {
		return nil, err
	}
	out := make(map[string]any)
	return out, s.read(ctx, func(t *sqlTx) error { return readAppState.into(t, sessionKey{owner: owner{app: appName}}, out) })
}

func (s *SQLService) UserState(ctx context.Context, appName, userID string) (map[string]any, error) {
	if err := validateOwner(appName, userID); err != nil {
		return nil, err
	}
	out := make(map[string]any)
	return out, s.read(ctx, func(t *sqlTx) error { return readUserState.into(t, sessionKey{owner: owner{appName, userID}}, out) })
}

func (s *SQLService) UpdateAppState(ctx context.Context, appName string, delta map[string]any) error {
	if err := ident.Check("app name", appName); err != nil {
		return err
	}
	d, err := splitScopedDelta(delta, state.ScopeApp, s.maxValueBytes)
	if err != nil || len(d) == 0 {
		return err
	}
	return s.write(ctx, func(w *sqlTx) error {
		return writeState(w, sessionKey{owner: owner{app: appName}}, state.Delta{App: d})
	})
}

func (s *SQLService) UpdateUserState(ctx context.Context, appName, userID string, delta map[string]any) error {
	if err := validateOwner(appName, userID); err != nil {
		return err
	}
	d, err := splitScopedDelta(delta, state.ScopeUser, s.maxValueBytes)
	if err != nil || len(d) == 0 {
		return err
	}
	return s.write(ctx, func(w *sqlTx) error {
		return writeState(w, sessionKey{owner: owner{appName, userID}}, state.Delta{User: d})
	})
}

func (s *SQLService) Changes(ctx context.Context, req *ChangesRequest) (*ChangesResponse, error) {
	limit, err := changesLimit(req)
	if err != nil {
		return nil, err
	}
	var (
		events []eventRow
		tombs  []tombstoneRow
		head   int64
	)
	bound, err := s.feedBound(ctx)
	if err != nil {
		return nil, err
	}
	// One snapshot for both tables: read separately, a deletion committed
	// between the two queries could hide an event with a lower cursor.
	read, latest := s.read, ""
	if s.stmts.dialect == "mysql" {
		// A snapshot on MariaDB was seen to hold cursor 11 and not 10 (one
		// event in a few hundred runs of FeedReaderNeverSkips under load):
		// it seems to release a writer's lock on the feed's head a moment
		// before its commit is in every new snapshot, and a reader that
		// went past 11 never saw 10. A locking read sees what has
		// committed, waiting for a row whose insert has not, and takes no
		// gap locks under READ COMMITTED, so writers do not wait for it.
		// The deletion the comment above fears writes its tombstone first,
		// and events are read first.
		read, latest = s.readCommitted, " LOCK IN SHARE MODE"
	}
	err = read(ctx, func(t *sqlTx) error {
		var err error
		if events, err = t.events(nil, "SELECT "+eventColumns+" FROM events WHERE feed_cursor > ? AND feed_cursor <= ? ORDER BY feed_cursor LIMIT ?"+latest, req.After, bound, limit); err != nil {
			return err
		}
		// A blank tombstone (see EraseTombstones) is not a change: it only holds SQLite's cursors up.
		rows, err := t.query("SELECT feed_cursor, app_name, user_id, session_id FROM session_tombstones WHERE feed_cursor > ? AND feed_cursor <= ? AND app_name <> '' ORDER BY feed_cursor LIMIT ?"+latest, req.After, bound, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r tombstoneRow
			if err := rows.Scan(&r.Cursor, &r.AppName, &r.UserID, &r.SessionID); err != nil {
				return err
			}
			tombs = append(tombs, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		_, err = t.scanRow("SELECT coalesce(max(c), 0) FROM (SELECT max(feed_cursor) AS c FROM events WHERE feed_cursor <= ?"+
			" UNION ALL SELECT max(feed_cursor) FROM session_tombstones WHERE feed_cursor <= ? AND app_name <> '') AS highest", []any{bound, bound}, &head)
		return err
	})
	if err != nil {
		return nil, err
	}
	resp := &ChangesResponse{Cursor: req.After, Head: head}
	for len(resp.Changes) < limit && (len(events) > 0 || len(tombs) > 0) {
		var c Change
		if len(tombs) == 0 || (len(events) > 0 && events[0].Cursor < tombs[0].Cursor) {
			ev, err := events[0].event()
			if err != nil {
				return nil, err
			}
			r := events[0]
			c = Change{Cursor: r.Cursor, Kind: ChangeEventAppended, AppName: r.AppName, UserID: r.UserID, SessionID: r.SessionID, Event: ev}
			events = events[1:]
		} else {
			t := tombs[0]
			c = Change{Cursor: t.Cursor, Kind: ChangeSessionDeleted, AppName: t.AppName, UserID: t.UserID, SessionID: t.SessionID}
			tombs = tombs[1:]
		}
		resp.Changes = append(resp.Changes, c)
		resp.Cursor = c.Cursor
	}
	return resp, nil
}

// sessions runs a query for sessions' id, created_ns, updated_ns and last_seq.
func (w *sqlTx) sessions(query string, args ...any) ([]sessionRow, error) {
	rows, err := w.query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sessionRow
	for rows.Next() {
		var r sessionRow
		if err := rows.Scan(&r.ID, &r.CreatedNs, &r.UpdatedNs, &r.LastSeq, &r.Title); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *SQLService) newHandle(key sessionKey, merged map[string]any, events []*Event, lastSeq, updatedNs int64) *handle {
	return &handle{
		id: key.id, app: key.app, user: key.user,
		state:  state.NewMap(merged, s.maxValueBytes),
		events: events, lastSeq: lastSeq,
		updated: time.Unix(0, updatedNs).UTC(),
	}
}

func (s *SQLService) isDuplicateKey(err error) bool {
	if t, ok := s.db.Dialector.(gorm.ErrorTranslator); ok && err != nil {
		return errors.Is(t.Translate(err), gorm.ErrDuplicatedKey)
	}
	return false
}

// insertWithCursor inserts one row into target ("table (feed_cursor, cols…)")
// with the next change-feed cursor in its first column and args in the
// others, and returns the cursor. A feed reader must never pass a cursor
// whose change may still commit, or it would skip it.
//
// SQLite has one writer at a time, so the next cursor is one past the
// highest stored, which two index lookups find: that saves a row write and
// a statement per append (15% of its time). It holds because the highest
// cursor ever handed out stays stored: tombstones are never deleted, and a
// deletion writes its tombstone before it deletes the session's events.
//
// PostgreSQL takes cursors from a sequence, which serialises nothing. A
// writer holds a shared advisory lock from just before it takes its cursor
// until it commits, and a feed reader first takes that lock exclusively
// (feedBound): then no cursor handed out is still in flight, and the reader
// goes no further than the last one. Writers never wait for each other;
// taking cursors from a row locked until commit instead (as on MySQL) made
// concurrent appends queue behind each other's commits: 8 writers appended
// more slowly than 2.
//
// MySQL takes the cursor from the single change_feed_head row, whose lock
// is held until commit, so cursors become visible in increasing order.
func insertWithCursor(w *sqlTx, target string, args ...any) (int64, error) {
	if w.dialect == "mysql" {
		// The next value handed back by LAST_INSERT_ID.
		_, cursor, err := w.execID("UPDATE change_feed_head SET last_cursor = LAST_INSERT_ID(last_cursor + 1) WHERE id = 1")
		if err != nil {
			return 0, err
		}
		_, err = w.exec("INSERT INTO "+target+" VALUES (?"+strings.Repeat(", ?", len(args))+")", append([]any{cursor}, args...)...)
		return cursor, err
	}
	with, next := "", "(SELECT coalesce(max(c), 0) + 1 FROM (SELECT max(feed_cursor) AS c FROM events UNION ALL SELECT max(feed_cursor) FROM session_tombstones) AS highest)"
	if w.dialect == "postgres" {
		// The sequence is read in a row of the materialized lock query, so
		// only once the lock is held.
		with = "WITH in_flight AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(" + feedLock + ")) "
		next = "(SELECT nextval('hector_feed_cursor') FROM in_flight)"
	}
	cursor, _, err := w.returning(with+"INSERT INTO "+target+" VALUES ("+next+strings.Repeat(", ?", len(args))+") RETURNING feed_cursor", args...)
	return cursor, err
}

// feedLock is the advisory lock key of the change feed of the current schema.
const feedLock = "hashtextextended(current_schema() || '/hector-feed', 0)"

// feedBound returns the highest cursor a feed reader may go to now: every
// change at or below it has committed (or rolled back), so a snapshot taken
// afterwards holds all of them. See insertWithCursor.
func (s *SQLService) feedBound(ctx context.Context) (int64, error) {
	if s.stmts.dialect != "postgres" {
		return math.MaxInt64, nil // cursors become visible in order already
	}
	var bound int64
	err := runTx(ctx, s.sqlDB, s.stmts, nil, func(t *sqlTx) error {
		// Waits for the writers between taking a cursor and committing;
		// writers that come later wait the moment this transaction lasts.
		if _, err := t.exec("SELECT pg_advisory_xact_lock(" + feedLock + ")"); err != nil {
			return err
		}
		_, err := t.scanRow("SELECT last_value FROM hector_feed_cursor", nil, &bound)
		return err
	})
	return bound, err
}
