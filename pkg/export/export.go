// Package export writes everything Hector holds about one user as one
// streamed tar archive, so that they can have it (access on request):
//
//	user.jsonl                 the user: their user: state and every
//	                           version of their facts, theirs and their
//	                           sessions', with validity and provenance
//	sessions/<n>.jsonl         a session: a line for the session, then
//	                           one per event, in order
//	artifacts/<n>/<v>          each version of each artifact, as stored;
//	                           its description is a line of user.jsonl
//
// Every line is a JSON object with a "kind".
package export

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/session"
	hstate "github.com/hectormem/hector/pkg/state"
)

// Services are the stores a user is read from; Artifacts and Facts may be nil.
type Services struct {
	Sessions  session.Service
	Artifacts artifacts.Service
	Facts     *facts.Service
}

// Write writes the archive of one user to w.
func Write(ctx context.Context, w io.Writer, svcs Services, appName, userID string) error {
	tw := tar.NewWriter(w)
	now := time.Now().UTC()
	file := func(name string, content []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(content)), ModTime: now}); err != nil {
			return err
		}
		_, err := tw.Write(content)
		return err
	}
	var user bytes.Buffer // small: state, facts and artifacts' descriptions
	line := func(buf *bytes.Buffer, v any) error { return json.NewEncoder(buf).Encode(v) }
	if err := line(&user, map[string]any{"kind": "user", "app_name": appName, "user_id": userID, "exported_at": now}); err != nil {
		return err
	}
	st, err := svcs.Sessions.UserState(ctx, appName, userID)
	if err != nil {
		return err
	}
	line(&user, map[string]any{"kind": "user_state", "state": st})
	if svcs.Facts != nil {
		all, err := svcs.Facts.UserFacts(ctx, appName, userID)
		if err != nil {
			return err
		}
		for _, f := range all {
			line(&user, map[string]any{"kind": "fact", "fact": f})
		}
	}

	files := 0
	writeArtifacts := func(sessionID string, keep func(name string) bool) error {
		if svcs.Artifacts == nil {
			return nil
		}
		list, err := svcs.Artifacts.List(ctx, appName, userID, sessionID)
		if err != nil {
			return err
		}
		for _, latest := range list {
			if !keep(latest.Name) {
				continue
			}
			ref := artifacts.Ref{AppName: appName, UserID: userID, SessionID: sessionID, Name: latest.Name}
			versions, err := svcs.Artifacts.Versions(ctx, ref)
			if err != nil {
				return err
			}
			files++ // one directory per artifact, one file per version
			for _, v := range versions {
				name := fmt.Sprintf("artifacts/%d/%d", files, v.Version)
				owner := sessionID
				if strings.HasPrefix(v.Name, artifacts.UserPrefix) {
					owner = ""
				}
				line(&user, map[string]any{"kind": "artifact", "session_id": owner, "artifact": v, "file": name})
				info, body, err := svcs.Artifacts.Open(ctx, ref, v.Version)
				if err != nil {
					return err
				}
				err = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: info.Size, ModTime: info.CreatedAt})
				if err == nil {
					_, err = io.Copy(tw, body)
				}
				body.Close()
				if err != nil {
					return err
				}
			}
		}
		return nil
	}

	req := &session.ListRequest{AppName: appName, UserID: userID, PageSize: session.MaxPageSize}
	n, userArtifactsDone := 0, false
	for {
		page, err := svcs.Sessions.List(ctx, req)
		if err != nil {
			return err
		}
		for _, s := range page.Sessions {
			got, err := svcs.Sessions.Get(ctx, &session.GetRequest{AppName: appName, UserID: userID, SessionID: s.ID()})
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			state := map[string]any{} // the session's own keys: app: keys are every user's, user: keys are above
			for k, v := range got.Session.State().All() {
				if !strings.HasPrefix(k, hstate.KeyPrefixApp) && !strings.HasPrefix(k, hstate.KeyPrefixUser) {
					state[k] = v
				}
			}
			line(&buf, map[string]any{"kind": "session", "id": s.ID(), "state": state, "last_update_time": got.Session.LastUpdateTime()})
			for ev := range got.Session.Events().All() {
				line(&buf, map[string]any{"kind": "event", "event": ev})
			}
			n++
			if err := file(fmt.Sprintf("sessions/%d.jsonl", n), buf.Bytes()); err != nil {
				return err
			}
			// A session lists its own artifacts and its user's: the user's once.
			first := !userArtifactsDone
			userArtifactsDone = true
			if err := writeArtifacts(s.ID(), func(name string) bool { return first || !strings.HasPrefix(name, artifacts.UserPrefix) }); err != nil {
				return err
			}
		}
		if page.NextPageToken == "" {
			break
		}
		req.PageToken = page.NextPageToken
	}
	if !userArtifactsDone { // no session to list them through
		if err := writeArtifacts("export", func(name string) bool { return strings.HasPrefix(name, artifacts.UserPrefix) }); err != nil {
			return err
		}
	}
	if err := file("user.jsonl", user.Bytes()); err != nil {
		return err
	}
	return tw.Close()
}
