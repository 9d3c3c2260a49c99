// Package session is Hector's source of truth: sessions, their append-only
// event logs and their scoped state, with an in-memory backend and a SQL one
// (SQLite embedded, PostgreSQL in production) that behave the same.
package session

import (
	"context"
	"iter"
	"time"

	"github.com/hectormem/hector/pkg/state"

	"github.com/hectormem/hector/pkg/errkind"
)

var (
	// ErrNotFound: the session does not exist (or belongs to another app or user).
	ErrNotFound = errkind.New(errkind.NotFound, "session not found")
	// ErrAlreadyExists: a session or event with that ID already exists.
	ErrAlreadyExists = errkind.New(errkind.AlreadyExists, "already exists")
	// ErrConflict: a compare-and-swap append found the session had moved on.
	ErrConflict = errkind.New(errkind.Conflict, "session changed since it was read")
	// ErrInvalidArgument wraps every error caused by bad input; nothing was written.
	ErrInvalidArgument error = errkind.InvalidArgument
	// ErrClosed: the service was closed; nothing was written.
	ErrClosed = errkind.New(errkind.Unavailable, "session service is closed")
)

// Service stores sessions. Every method is safe for concurrent use, and every
// read is scoped to the (app, user) it names.
type Service interface {
	Create(ctx context.Context, req *CreateRequest) (*CreateResponse, error)
	Get(ctx context.Context, req *GetRequest) (*GetResponse, error)
	List(ctx context.Context, req *ListRequest) (*ListResponse, error)
	// Delete removes the session, its events and its session state.
	Delete(ctx context.Context, req *DeleteRequest) error
	// SetTitle names what a session is about ("" removes its title).
	SetTitle(ctx context.Context, req *SetTitleRequest) error
	// AppendEvent stores ev and applies its state delta in one transaction,
	// then updates s and fills in ev's ID (if empty), Timestamp (if zero), Seq
	// and Cursor. Partial events are ignored. On error nothing was written
	// and neither s nor ev changed.
	AppendEvent(ctx context.Context, s Session, ev *Event, opts ...AppendOption) error
	// AppendEvents appends evs in order as one write: all of them and their
	// state deltas in one transaction, with consecutive sequence numbers,
	// or none of them (every event is validated before any is written).
	// The options apply to the batch: ExpectLastSeq is the session's
	// sequence number before its first event. On success s and each event
	// are updated as AppendEvent updates them.
	AppendEvents(ctx context.Context, s Session, evs []*Event, opts ...AppendOption) error

	// AppState returns an app's app: keys.
	AppState(ctx context.Context, appName string) (map[string]any, error)
	// UserState returns one user's user: keys.
	UserState(ctx context.Context, appName, userID string) (map[string]any, error)
	// UpdateAppState applies a delta of app: keys (nil deletes) without a session.
	UpdateAppState(ctx context.Context, appName string, delta map[string]any) error
	// UpdateUserState applies a delta of user: keys (nil deletes) without a session.
	UpdateUserState(ctx context.Context, appName, userID string, delta map[string]any) error

	// Changes pages through the change feed: every event appended and every
	// session deleted, in cursor order, after req.After.
	Changes(ctx context.Context, req *ChangesRequest) (*ChangesResponse, error)

	// OnDelete adds h to the hooks Delete runs (see WithDeleteHook).
	OnDelete(h DeleteHook)
}

// Session is a handle on one stored session as it was read, kept up to date
// by the appends made through it.
type Session interface {
	ID() string
	AppName() string
	UserID() string
	// Title is what the session is about, as its creator or SetTitle named
	// it; "" when it has none.
	Title() string
	// State is the merged view of app:, user:, session and temp: keys.
	// Setting a key here changes only this handle; to store a change, put it
	// in an event's Actions.StateDelta.
	State() state.State
	Events() Events
	LastUpdateTime() time.Time
	// LastSeq is the sequence number of the session's newest event when the
	// handle was read or last appended through; 0 for a session with none.
	LastSeq() int64
}

// Events is a read-only list of events.
type Events interface {
	All() iter.Seq[*Event]
	At(i int) *Event
	Len() int
}

// CreateRequest creates a session. SessionID is optional: one is generated
// when it is empty. State is routed by scope: app: and user: keys update the
// app's and user's state, temp: keys reach only the returned handle.
type CreateRequest struct {
	AppName, UserID, SessionID string
	State                      map[string]any
	// Title is optional: what the session is about (see MaxTitleChars).
	Title string
}

// SetTitleRequest names what a session is about.
type SetTitleRequest struct {
	AppName, UserID, SessionID string
	Title                      string
}

// MaxTitleChars bounds a session's title.
const MaxTitleChars = 200

// CreateResponse holds the new session.
type CreateResponse struct{ Session Session }

// GetRequest reads a session. NumRecentEvents > 0 keeps only that many of the
// newest events; a non-zero After keeps only events with a later timestamp;
// BeforeSeq > 0 keeps only events with a lower sequence number, so that
// NumRecentEvents and BeforeSeq page back through a session (the next page
// is before the first event of this one).
type GetRequest struct {
	AppName, UserID, SessionID string
	NumRecentEvents            int
	After                      time.Time
	BeforeSeq                  int64
}

// GetResponse holds the session read.
type GetResponse struct{ Session Session }

// ListRequest lists one user's sessions, newest first: by creation, or,
// with ByUpdate, by their last update (a session written to moves to the
// front; one written while a caller pages may move out of the pages it
// has not read). PageSize defaults to DefaultPageSize and may not exceed
// MaxPageSize; PageToken continues a listing in the same order.
type ListRequest struct {
	AppName, UserID string
	PageSize        int
	PageToken       string
	ByUpdate        bool
}

// Page sizes for List.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// ListResponse holds one page of sessions, with their state but without
// events. NextPageToken is empty on the last page.
type ListResponse struct {
	Sessions      []Session
	NextPageToken string
}

// DeleteRequest names the session to delete.
type DeleteRequest struct{ AppName, UserID, SessionID string }

// AppendOption changes how AppendEvent behaves.
type AppendOption func(*appendOptions)

type appendOptions struct{ expectSeq *int64 }

// ExpectLastSeq makes an append compare-and-swap: it succeeds only if the
// session's newest event still has sequence number seq (0: no events), and
// fails with ErrConflict otherwise. Pass s.LastSeq() to append only if nobody
// else appended since s was read.
func ExpectLastSeq(seq int64) AppendOption {
	return func(o *appendOptions) { o.expectSeq = &seq }
}

// ChangeKind says what a change-feed entry records.
type ChangeKind string

// The change kinds.
const (
	ChangeEventAppended  ChangeKind = "event_appended"
	ChangeSessionDeleted ChangeKind = "session_deleted"
)

// Change is one entry of the change feed. Event is set for ChangeEventAppended.
type Change struct {
	Cursor                     int64
	Kind                       ChangeKind
	AppName, UserID, SessionID string
	Event                      *Event
}

// ChangesRequest asks for the changes after cursor After (0: from the
// start). Limit defaults to DefaultChangesLimit and may not exceed MaxChangesLimit.
type ChangesRequest struct {
	After int64
	Limit int
}

// Page sizes for Changes.
const (
	DefaultChangesLimit = 500
	MaxChangesLimit     = 10000
)

// ChangesResponse holds a page of changes in cursor order. Cursor is the
// cursor to pass as After next time; it equals the request's After when
// there was nothing new. Head is the newest cursor in the store when the
// page was read: Head - Cursor is how far a reader lags (none when below
// 0: an erasure removed the newest changes, which the reader had passed).
type ChangesResponse struct {
	Changes []Change
	Cursor  int64
	Head    int64
}
