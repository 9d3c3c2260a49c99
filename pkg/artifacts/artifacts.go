// Package artifacts stores versioned files beside sessions: charts, reports,
// uploads. A plain name belongs to one session; a name starting with "user:"
// belongs to the user and is visible from every one of the user's sessions.
// Every save makes a new version (1, 2, 3, …); nothing is overwritten.
package artifacts

import (
	"context"
	"io"
	"time"

	"github.com/hectormem/hector/pkg/errkind"
)

var (
	// ErrNotFound: no such artifact or version in the caller's scope.
	ErrNotFound = errkind.New(errkind.NotFound, "artifact not found")
	// ErrInvalidArgument wraps every error caused by bad input; nothing was written.
	ErrInvalidArgument error = errkind.InvalidArgument
	// ErrTooLarge: the content is over the store's size limit; nothing was written.
	ErrTooLarge = errkind.New(errkind.TooLarge, "artifact too large")
)

// UserPrefix marks a name that belongs to the user rather than the session.
const UserPrefix = "user:"

// DefaultMaxSize is the largest artifact a store accepts unless configured otherwise.
const DefaultMaxSize = 64 << 20

// Ref names an artifact as seen from one session. A user: artifact may
// be named without a session (SessionID "").
type Ref struct {
	AppName, UserID, SessionID string
	Name                       string
}

// Info describes one stored version.
type Info struct {
	Name      string         `json:"name"`
	Version   int64          `json:"version"`
	MimeType  string         `json:"mime_type"`
	Size      int64          `json:"size"`
	SHA256    string         `json:"sha256"` // hex
	CreatedAt time.Time      `json:"created_at"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// SaveRequest stores Body as the next version of Ref.Name. An empty MimeType
// is detected from the first bytes of the content.
type SaveRequest struct {
	Ref
	MimeType string
	Metadata map[string]any
	Body     io.Reader
	// CreatedAt is the version's creation time; zero is now. Restoring an
	// export sets it to the time the version was first saved.
	CreatedAt time.Time
}

// createdAt is when the version saved by r was created.
func (r *SaveRequest) createdAt() time.Time {
	if r.CreatedAt.IsZero() {
		return time.Now().UTC()
	}
	return r.CreatedAt.UTC()
}

// Service stores artifacts. Content streams in and out, so a large artifact
// is never held in memory whole by the SQL and filesystem stores.
type Service interface {
	// Save stores a new version and returns its description.
	Save(ctx context.Context, req *SaveRequest) (*Info, error)
	// Open returns a version (0: the latest) and a reader of its content,
	// which the caller must close.
	Open(ctx context.Context, ref Ref, version int64) (*Info, io.ReadCloser, error)
	// List describes the latest version of every name visible from a
	// session, its own and its user's, in name order; with sessionID "",
	// of the user's own.
	List(ctx context.Context, appName, userID, sessionID string) ([]*Info, error)
	// Versions describes every version of a name, oldest first.
	Versions(ctx context.Context, ref Ref) ([]*Info, error)
	// Delete removes every version of a name.
	Delete(ctx context.Context, ref Ref) error
	// DeleteSession removes a session's own artifacts, not its user's. It
	// has session.DeleteHook's shape, so that deleting a session cascades.
	DeleteSession(ctx context.Context, appName, userID, sessionID string) error
	// Sessions lists the sessions of a user that hold artifacts of their
	// own, in ID order, whether or not the session itself still exists:
	// erasing a user reaches what a deleted session left behind.
	Sessions(ctx context.Context, appName, userID string) ([]string, error)
}

// Option configures a store.
type Option func(*options)

type options struct{ maxSize int64 }

// WithMaxSize sets the largest artifact accepted (default DefaultMaxSize).
func WithMaxSize(bytes int64) Option { return func(o *options) { o.maxSize = bytes } }

func newOptions(opts []Option) options {
	o := options{maxSize: DefaultMaxSize}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
