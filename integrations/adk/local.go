package hectoradk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"time"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/index"
	hsession "github.com/hectormem/hector/pkg/session"
)

// local is Hector's stores in this process, as `hector serve` opens them.
type local struct{ h *app.Services }

func (l local) createSession(ctx context.Context, app, user, id string, st map[string]any) (*stored, error) {
	resp, err := l.h.Sessions.Create(ctx, &hsession.CreateRequest{AppName: app, UserID: user, SessionID: id, State: st})
	if err != nil {
		return nil, err
	}
	return fromHandle(resp.Session), nil
}

func (l local) getSession(ctx context.Context, app, user, id string, recent int, after time.Time) (*stored, error) {
	req := &hsession.GetRequest{AppName: app, UserID: user, SessionID: id, NumRecentEvents: recent}
	if !after.IsZero() {
		req.After = after.Add(-time.Nanosecond) // Hector keeps events later than After; ADK those at or after it
	}
	resp, err := l.h.Sessions.Get(ctx, req)
	if err != nil {
		return nil, err
	}
	return fromHandle(resp.Session), nil
}

func (l local) listSessions(ctx context.Context, app, user string) ([]*stored, error) {
	if user != "" {
		return l.listOwn(ctx, app, user)
	}
	lister, ok := l.h.Sessions.(hsession.OwnerLister)
	if !ok {
		return nil, errors.New("hectoradk: this session backend cannot list an app's users; give a user ID")
	}
	var out []*stored
	for token := ""; ; {
		page, err := lister.ListOwners(ctx, &hsession.OwnersRequest{AppName: app, PageSize: hsession.MaxPageSize, PageToken: token})
		if err != nil {
			return nil, err
		}
		for _, o := range page.Owners {
			own, err := l.listOwn(ctx, app, o.UserID)
			if err != nil {
				return nil, err
			}
			out = append(out, own...)
		}
		if token = page.NextPageToken; token == "" {
			return out, nil
		}
	}
}

func (l local) listOwn(ctx context.Context, app, user string) ([]*stored, error) {
	var out []*stored
	for token := ""; ; {
		page, err := l.h.Sessions.List(ctx, &hsession.ListRequest{AppName: app, UserID: user, PageSize: hsession.MaxPageSize, PageToken: token})
		if err != nil {
			return nil, err
		}
		for _, s := range page.Sessions {
			out = append(out, fromHandle(s))
		}
		if token = page.NextPageToken; token == "" {
			return out, nil
		}
	}
}

func (l local) deleteSession(ctx context.Context, app, user, id string) error {
	err := l.h.Sessions.Delete(ctx, &hsession.DeleteRequest{AppName: app, UserID: user, SessionID: id})
	if errors.Is(err, hsession.ErrNotFound) {
		return nil
	}
	return err
}

func (l local) appendEvent(ctx context.Context, app, user, id string, ev *hsession.Event) error {
	ref := hsession.Ref(app, user, id)
	if err := l.h.Sessions.AppendEvent(ctx, ref, ev); err != nil {
		return err
	}
	// As `hector serve` does: the words are searchable at once; the change
	// feed would make up for a failure.
	if err := l.h.Index.Index(ctx, ref); err != nil {
		return fmt.Errorf("hectoradk: the event is stored, but indexing it failed (the index catches up from the change feed): %w", err)
	}
	return nil
}

func (l local) search(ctx context.Context, app, user, query string, limit int) ([]index.SearchResult, error) {
	resp, err := l.h.Index.Search(ctx, &index.SearchRequest{Query: query, AppName: app, UserID: user, Limit: limit})
	if err != nil {
		return nil, err
	}
	return resp.Results, nil
}

func (l local) saveArtifact(ctx context.Context, ref artifacts.Ref, mimeType string, text bool, body io.Reader) (*artifacts.Info, error) {
	return l.h.Artifacts.Save(ctx, &artifacts.SaveRequest{Ref: ref, MimeType: mimeType, Metadata: textMetadata(text), Body: body})
}

func (l local) openArtifact(ctx context.Context, ref artifacts.Ref, version int64) (*artifacts.Info, io.ReadCloser, error) {
	return l.h.Artifacts.Open(ctx, ref, version)
}

func (l local) listArtifacts(ctx context.Context, app, user, sessionID string) ([]*artifacts.Info, error) {
	return l.h.Artifacts.List(ctx, app, user, sessionID)
}

func (l local) artifactVersions(ctx context.Context, ref artifacts.Ref) ([]*artifacts.Info, error) {
	return l.h.Artifacts.Versions(ctx, ref)
}

func (l local) deleteArtifact(ctx context.Context, ref artifacts.Ref) error {
	return l.h.Artifacts.Delete(ctx, ref)
}

func fromHandle(s hsession.Session) *stored {
	out := &stored{ID: s.ID(), AppName: s.AppName(), UserID: s.UserID(), State: maps.Collect(s.State().All()), LastUpdateTime: s.LastUpdateTime()}
	for ev := range s.Events().All() {
		out.Events = append(out.Events, ev)
	}
	return out
}
