package sessiontest_test

import (
	"context"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/session/sessiontest"
	"github.com/hectormem/hector/pkg/state"
)

// A backend written outside pkg/session, with session handles of its own,
// passes the whole suite: nothing in it needs pkg/session's own types. This
// one keeps its sessions in an in-memory service and hands out handles of
// its own type; it takes back its own handles and any other Session (such
// as session.Ref's) by what they name.
func TestBackendOutsideTheSessionPackage(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T, opts ...session.Option) session.Service {
		return &outside{Service: session.NewInMemoryService(opts...)}
	})
}

type outside struct{ session.Service }

// handle is the backend's own session type.
type handle struct{ inner session.Session }

func (h *handle) ID() string                { return h.inner.ID() }
func (h *handle) AppName() string           { return h.inner.AppName() }
func (h *handle) UserID() string            { return h.inner.UserID() }
func (h *handle) Title() string             { return h.inner.Title() }
func (h *handle) State() state.State        { return h.inner.State() }
func (h *handle) Events() session.Events    { return h.inner.Events() }
func (h *handle) LastUpdateTime() time.Time { return h.inner.LastUpdateTime() }
func (h *handle) LastSeq() int64            { return h.inner.LastSeq() }

func wrap(s session.Session) session.Session {
	if s == nil {
		return nil
	}
	return &handle{s}
}

func unwrap(s session.Session) session.Session {
	if h, ok := s.(*handle); ok {
		return h.inner
	}
	return s
}

func (o *outside) Create(ctx context.Context, req *session.CreateRequest) (*session.CreateResponse, error) {
	resp, err := o.Service.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	return &session.CreateResponse{Session: wrap(resp.Session)}, nil
}

func (o *outside) Get(ctx context.Context, req *session.GetRequest) (*session.GetResponse, error) {
	resp, err := o.Service.Get(ctx, req)
	if err != nil {
		return nil, err
	}
	return &session.GetResponse{Session: wrap(resp.Session)}, nil
}

func (o *outside) List(ctx context.Context, req *session.ListRequest) (*session.ListResponse, error) {
	resp, err := o.Service.List(ctx, req)
	if err != nil {
		return nil, err
	}
	for i, s := range resp.Sessions {
		resp.Sessions[i] = wrap(s)
	}
	return resp, nil
}

func (o *outside) AppendEvent(ctx context.Context, s session.Session, ev *session.Event, opts ...session.AppendOption) error {
	return o.Service.AppendEvent(ctx, unwrap(s), ev, opts...)
}

func (o *outside) AppendEvents(ctx context.Context, s session.Session, evs []*session.Event, opts ...session.AppendOption) error {
	return o.Service.AppendEvents(ctx, unwrap(s), evs, opts...)
}

// The optional interfaces the suite asks for.

func (o *outside) Restore(ctx context.Context, req *session.RestoreRequest) (session.Session, error) {
	s, err := o.Service.(session.Restorer).Restore(ctx, req)
	return wrap(s), err
}

func (o *outside) ListOwners(ctx context.Context, req *session.OwnersRequest) (*session.OwnersResponse, error) {
	return o.Service.(session.OwnerLister).ListOwners(ctx, req)
}

func (o *outside) EraseTombstones(ctx context.Context, appName, userID string) (int, error) {
	return o.Service.(session.TombstoneEraser).EraseTombstones(ctx, appName, userID)
}

func (o *outside) Lineage(ctx context.Context) (session.Lineage, error) {
	return o.Service.(session.LineageReader).Lineage(ctx)
}
