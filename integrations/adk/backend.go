package hectoradk

import (
	"context"
	"io"
	"time"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/index"
	hsession "github.com/hectormem/hector/pkg/session"
)

// backend is what ADK's services need of a Hector: its stores in this
// process (local) or a `hector serve` over HTTP (remote). Both speak
// Hector's own types, so that the mapping to ADK's is written once.
// Errors wrap hsession.ErrNotFound, hsession.ErrAlreadyExists and
// artifacts.ErrNotFound where those apply, whichever way they came.
type backend interface {
	createSession(ctx context.Context, app, user, id string, state map[string]any) (*stored, error)
	// getSession keeps the recent newest events (0: all) of those at or
	// after after (zero: all).
	getSession(ctx context.Context, app, user, id string, recent int, after time.Time) (*stored, error)
	// listSessions lists a user's sessions, without events; with user "",
	// every user's of the app.
	listSessions(ctx context.Context, app, user string) ([]*stored, error)
	// deleteSession deletes a session with all that is its; one that does
	// not exist is no error.
	deleteSession(ctx context.Context, app, user, id string) error
	// appendEvent stores ev and fills in its ID and Timestamp if empty,
	// as stored; the index has its words when it returns.
	appendEvent(ctx context.Context, app, user, id string, ev *hsession.Event) error
	search(ctx context.Context, app, user, query string, limit int) ([]index.SearchResult, error)

	// saveArtifact stores a new version; text marks it a text part.
	saveArtifact(ctx context.Context, ref artifacts.Ref, mimeType string, text bool, body io.Reader) (*artifacts.Info, error)
	// openArtifact reads a version (0: the latest), its metadata with it;
	// the caller closes it.
	openArtifact(ctx context.Context, ref artifacts.Ref, version int64) (*artifacts.Info, io.ReadCloser, error)
	// listArtifacts describes the latest version of every name a session sees.
	listArtifacts(ctx context.Context, app, user, sessionID string) ([]*artifacts.Info, error)
	artifactVersions(ctx context.Context, ref artifacts.Ref) ([]*artifacts.Info, error)
	deleteArtifact(ctx context.Context, ref artifacts.Ref) error
}

// stored is a session as Hector holds it.
type stored struct {
	ID             string            `json:"id"`
	AppName        string            `json:"app_name"`
	UserID         string            `json:"user_id"`
	State          map[string]any    `json:"state"`
	Events         []*hsession.Event `json:"events"`
	LastUpdateTime time.Time         `json:"last_update_time"`
}
