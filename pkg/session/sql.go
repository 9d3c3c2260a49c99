package session

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hectormem/hector/pkg/state"
)

// SQLService stores sessions in a SQL database through GORM: SQLite (see
// sqldb.OpenSQLite) or PostgreSQL (sqldb.OpenPostgres).
type SQLService struct {
	limits
	db     *gorm.DB
	sqlite bool
	// SQLite allows one writer at a time. Queueing writers here is fair and
	// cheap; leaving them to SQLite's busy handler makes them sleep and retry.
	writeMu sync.Mutex
}

var _ Service = (*SQLService)(nil)

// NewSQLService returns a Service on db, creating or updating its tables.
func NewSQLService(db *gorm.DB, opts ...Option) (*SQLService, error) {
	if db == nil {
		return nil, errors.New("session: NewSQLService needs a database: open one with sqldb.Open")
	}
	err := db.AutoMigrate(&sessionRow{}, &eventRow{}, &appStateRow{}, &userStateRow{}, &sessionStateRow{}, &tombstoneRow{}, &feedHeadRow{})
	if err == nil {
		err = db.Clauses(clause.OnConflict{DoNothing: true}).Create(&feedHeadRow{ID: 1}).Error
	}
	if err != nil {
		return nil, fmt.Errorf("session: creating the session tables: %w", err)
	}
	return &SQLService{limits: newLimits(opts), db: db, sqlite: db.Dialector.Name() == "sqlite"}, nil
}

// write runs fn in a transaction, retrying the transient failures
// PostgreSQL reports when concurrent transactions deadlock.
func (s *SQLService) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.sqlite {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
	}
	for attempt := 1; ; attempt++ {
		err := s.db.WithContext(ctx).Transaction(fn)
		if attempt < 5 && isTransient(err) {
			continue
		}
		return err
	}
}

func isTransient(err error) bool {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) {
		code := pgErr.SQLState()
		return code == "40001" || code == "40P01" // serialization_failure, deadlock_detected
	}
	return false
}

// read runs fn on one consistent snapshot of the database.
func (s *SQLService) read(ctx context.Context, fn func(tx *gorm.DB) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if !s.sqlite { // a SQLite read transaction is already a snapshot
		opts.Isolation = sql.LevelRepeatableRead
	}
	return s.db.WithContext(ctx).Transaction(fn, opts)
}

func (s *SQLService) Create(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
	if req == nil {
		return nil, invalid("create request is nil")
	}
	id := req.SessionID
	if id == "" {
		id = newSessionID()
	}
	if err := validateSessionKey(req.AppName, req.UserID, id); err != nil {
		return nil, err
	}
	d, err := splitDelta(req.State, s.maxValueBytes)
	if err != nil {
		return nil, err
	}
	key := sessionKey{owner{req.AppName, req.UserID}, id}
	now := time.Now().UnixNano()
	var merged map[string]any
	err = s.write(ctx, func(tx *gorm.DB) error {
		row := sessionRow{AppName: key.app, UserID: key.user, ID: key.id, CreatedNs: now, UpdatedNs: now}
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return alreadyExists(key)
		}
		if err := writeState(tx, key, d); err != nil {
			return err
		}
		merged, err = readState(tx, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &CreateResponse{Session: s.newHandle(key, state.Merge(merged, d.Temp), nil, 0, now)}, nil
}

func (s *SQLService) Get(ctx context.Context, req *GetRequest) (*GetResponse, error) {
	if req == nil {
		return nil, invalid("get request is nil")
	}
	if err := validateSessionKey(req.AppName, req.UserID, req.SessionID); err != nil {
		return nil, err
	}
	if req.NumRecentEvents < 0 {
		return nil, invalid("NumRecentEvents %d is negative", req.NumRecentEvents)
	}
	key := sessionKey{owner{req.AppName, req.UserID}, req.SessionID}
	var (
		row    sessionRow
		rows   []eventRow
		merged map[string]any
	)
	err := s.read(ctx, func(tx *gorm.DB) error {
		err := tx.Where("app_name = ? AND user_id = ? AND id = ?", key.app, key.user, key.id).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return notFound(key)
		} else if err != nil {
			return err
		}
		q := tx.Where("app_name = ? AND user_id = ? AND session_id = ?", key.app, key.user, key.id)
		if !req.After.IsZero() {
			q = q.Where("timestamp_ns > ?", req.After.UnixNano())
		}
		if req.NumRecentEvents > 0 {
			// Newest first with a limit walks the primary key backwards: the
			// cost depends on the events asked for, not on the session's length.
			err = q.Order("seq DESC").Limit(req.NumRecentEvents).Find(&rows).Error
			slices.Reverse(rows)
		} else {
			err = q.Order("seq").Find(&rows).Error
		}
		if err != nil {
			return err
		}
		merged, err = readState(tx, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	events, err := eventsFromRows(rows)
	if err != nil {
		return nil, err
	}
	return &GetResponse{Session: s.newHandle(key, merged, events, row.LastSeq, row.UpdatedNs)}, nil
}

func (s *SQLService) List(ctx context.Context, req *ListRequest) (*ListResponse, error) {
	if req == nil {
		return nil, invalid("list request is nil")
	}
	if err := validateOwner(req.AppName, req.UserID); err != nil {
		return nil, err
	}
	size, err := pageSize(req.PageSize)
	if err != nil {
		return nil, err
	}
	from, err := parsePageToken(req.PageToken)
	if err != nil {
		return nil, err
	}
	o := owner{req.AppName, req.UserID}
	var (
		rows       []sessionRow
		shared     map[string]any
		perSession = make(map[string]map[string]any)
	)
	err = s.read(ctx, func(tx *gorm.DB) error {
		q := tx.Where("app_name = ? AND user_id = ?", o.app, o.user)
		if from != nil {
			q = q.Where("(created_ns < ? OR (created_ns = ? AND id < ?))", from.CreatedNs, from.CreatedNs, from.ID)
		}
		if err := q.Order("created_ns DESC, id DESC").Limit(size + 1).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		var err error
		if shared, err = readState(tx, sessionKey{owner: o}); err != nil {
			return err
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		var states []sessionStateRow
		err = tx.Where("app_name = ? AND user_id = ? AND session_id IN ?", o.app, o.user, ids).Find(&states).Error
		for _, st := range states {
			if perSession[st.SessionID] == nil {
				perSession[st.SessionID] = make(map[string]any)
			}
			if perSession[st.SessionID][st.StateKey], err = state.Decode([]byte(st.Value)); err != nil {
				return err
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	resp := &ListResponse{}
	if len(rows) > size {
		rows = rows[:size]
		resp.NextPageToken = listPosition{rows[size-1].CreatedNs, rows[size-1].ID}.token()
	}
	for _, r := range rows {
		key := sessionKey{o, r.ID}
		resp.Sessions = append(resp.Sessions, s.newHandle(key, state.Merge(shared, perSession[r.ID]), nil, r.LastSeq, r.UpdatedNs))
	}
	return resp, nil
}

func (s *SQLService) Delete(ctx context.Context, req *DeleteRequest) error {
	if req == nil {
		return invalid("delete request is nil")
	}
	if err := validateSessionKey(req.AppName, req.UserID, req.SessionID); err != nil {
		return err
	}
	key := sessionKey{owner{req.AppName, req.UserID}, req.SessionID}
	return s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Where("app_name = ? AND user_id = ? AND id = ?", key.app, key.user, key.id).Delete(&sessionRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return notFound(key)
		}
		for _, table := range []any{&eventRow{}, &sessionStateRow{}} {
			if err := tx.Where("app_name = ? AND user_id = ? AND session_id = ?", key.app, key.user, key.id).Delete(table).Error; err != nil {
				return err
			}
		}
		cursor, err := nextCursor(tx)
		if err != nil {
			return err
		}
		return tx.Create(&tombstoneRow{Cursor: cursor, AppName: key.app, UserID: key.user, SessionID: key.id}).Error
	})
}

func (s *SQLService) AppendEvent(ctx context.Context, sess Session, ev *Event, opts ...AppendOption) error {
	if ev != nil && ev.Partial {
		return nil
	}
	p, err := s.prepareAppend(sess, ev)
	if err != nil {
		return err
	}
	var o appendOptions
	for _, opt := range opts {
		opt(&o)
	}
	key := sessionKey{owner{p.h.app, p.h.user}, p.h.id}
	now := time.Now()
	var seq, cursor int64
	err = s.write(ctx, func(tx *gorm.DB) error {
		// Taking the next sequence number locks the session's row until
		// commit: appends to one session are serialised, never interleaved.
		q := "UPDATE sessions SET last_seq = last_seq + 1, updated_ns = ? WHERE app_name = ? AND user_id = ? AND id = ?"
		args := []any{now.UnixNano(), key.app, key.user, key.id}
		if o.expectSeq != nil {
			q += " AND last_seq = ?"
			args = append(args, *o.expectSeq)
		}
		res := tx.Raw(q+" RETURNING last_seq", args...).Scan(&seq)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			var row sessionRow
			err := tx.Where("app_name = ? AND user_id = ? AND id = ?", key.app, key.user, key.id).Take(&row).Error
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return notFound(key)
			} else if err != nil {
				return err
			}
			return conflict(key, *o.expectSeq, row.LastSeq)
		}
		var dup int64
		err := tx.Model(&eventRow{}).Where("app_name = ? AND user_id = ? AND session_id = ? AND event_id = ?",
			key.app, key.user, key.id, p.row.EventID).Count(&dup).Error
		if err != nil {
			return err
		}
		if dup > 0 {
			return eventExists(key, p.row.EventID)
		}
		if err := writeState(tx, key, p.delta); err != nil {
			return err
		}
		// The cursor comes last: its lock is held only for the insert and the commit.
		if cursor, err = nextCursor(tx); err != nil {
			return err
		}
		row := p.row
		row.Seq, row.Cursor = seq, cursor
		return tx.Create(&row).Error
	})
	if err != nil {
		return err
	}
	return p.finish(ev, seq, cursor, now)
}

func (s *SQLService) AppState(ctx context.Context, appName string) (map[string]any, error) {
	if err := validateID("app name", appName); err != nil {
		return nil, err
	}
	out := make(map[string]any)
	return out, readRows(s.db.WithContext(ctx), &[]appStateRow{}, out, "app_name = ?", appName)
}

func (s *SQLService) UserState(ctx context.Context, appName, userID string) (map[string]any, error) {
	if err := validateOwner(appName, userID); err != nil {
		return nil, err
	}
	out := make(map[string]any)
	return out, readRows(s.db.WithContext(ctx), &[]userStateRow{}, out, "app_name = ? AND user_id = ?", appName, userID)
}

func (s *SQLService) UpdateAppState(ctx context.Context, appName string, delta map[string]any) error {
	if err := validateID("app name", appName); err != nil {
		return err
	}
	d, err := splitScopedDelta(delta, state.ScopeApp, s.maxValueBytes)
	if err != nil || len(d) == 0 {
		return err
	}
	return s.write(ctx, func(tx *gorm.DB) error {
		return writeState(tx, sessionKey{owner: owner{app: appName}}, state.Delta{App: d})
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
	return s.write(ctx, func(tx *gorm.DB) error {
		return writeState(tx, sessionKey{owner: owner{appName, userID}}, state.Delta{User: d})
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
	)
	// One snapshot for both tables: read separately, a deletion committed
	// between the two queries could hide an event with a lower cursor.
	err = s.read(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("feed_cursor > ?", req.After).Order("feed_cursor").Limit(limit).Find(&events).Error; err != nil {
			return err
		}
		return tx.Where("feed_cursor > ?", req.After).Order("feed_cursor").Limit(limit).Find(&tombs).Error
	})
	if err != nil {
		return nil, err
	}
	resp := &ChangesResponse{Cursor: req.After}
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

func (s *SQLService) newHandle(key sessionKey, merged map[string]any, events []*Event, lastSeq, updatedNs int64) *handle {
	return &handle{
		id: key.id, app: key.app, user: key.user,
		state:  state.NewMap(merged, s.maxValueBytes),
		events: events, lastSeq: lastSeq,
		updated: time.Unix(0, updatedNs).UTC(),
	}
}

func nextCursor(tx *gorm.DB) (int64, error) {
	var cursor int64
	res := tx.Raw("UPDATE change_feed_head SET last_cursor = last_cursor + 1 WHERE id = 1 RETURNING last_cursor").Scan(&cursor)
	if res.Error == nil && res.RowsAffected != 1 {
		return 0, errors.New("session: the change_feed_head table has lost its row: recreate it with NewSQLService")
	}
	return cursor, res.Error
}
