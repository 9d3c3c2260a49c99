// Package userarchive moves everything Hector holds about one user in and
// out as one streamed tar archive: Write gives it to them (access on
// request), Restore writes it back into a deployment (moving a user).
//
//	user.jsonl                 first: the user, their user: state, every
//	                           version of their facts (theirs and their
//	                           sessions', with validity and provenance),
//	                           and a description of every artifact version
//	sessions/<n>.jsonl         a session, oldest first: a line for the
//	                           session, then one per event, in order
//	artifacts/<a>/<v>          version v of artifact a, as stored, after
//	                           the session it belongs to
//
// Every line is a JSON object with a "kind". user.jsonl comes first so
// that Restore streams the rest: it knows each artifact file before it
// reads it.
package userarchive

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/session"
	hstate "github.com/hectormem/hector/pkg/state"
)

// Format is the version of the archive's layout, in its first line. Format
// 2 counts the sessions there, so that an archive cut between two files is
// known to be short; Restore reads format 1 as well.
const Format = 2

// Services are the stores a user is read from and written to; Artifacts,
// Facts and Index may be nil.
type Services struct {
	Sessions  session.Service
	Artifacts artifacts.Service
	Facts     *facts.Service
	// Index, when set, is told of each restored session at once; without
	// it the index learns of them from the change feed.
	Index interface {
		Index(ctx context.Context, s session.Session) error
	}
	// Forget removes everything of a user, as an erasure does: it undoes a
	// refused restore (the user held nothing before it). Without it, a
	// refused restore may leave part of the archive written, and says so.
	Forget func(ctx context.Context, appName, userID string) error
}

// The lines of an archive.
type (
	userLine struct {
		Kind       string    `json:"kind"` // "user"
		Format     int       `json:"format"`
		AppName    string    `json:"app_name"`
		UserID     string    `json:"user_id"`
		ExportedAt time.Time `json:"exported_at"`
		Sessions   int       `json:"sessions"` // how many session files follow
	}
	userStateLine struct {
		Kind  string         `json:"kind"` // "user_state"
		State map[string]any `json:"state"`
	}
	factLine struct {
		Kind string           `json:"kind"` // "fact"
		Fact facts.ScopedFact `json:"fact"`
	}
	artifactLine struct {
		Kind      string          `json:"kind"`       // "artifact"
		SessionID string          `json:"session_id"` // "" for a user: artifact
		Artifact  *artifacts.Info `json:"artifact"`
		File      string          `json:"file"`
	}
	sessionLine struct {
		Kind           string         `json:"kind"` // "session"
		ID             string         `json:"id"`
		Title          string         `json:"title,omitempty"`
		State          map[string]any `json:"state"` // its own keys
		LastUpdateTime time.Time      `json:"last_update_time"`
	}
	eventLine struct {
		Kind  string         `json:"kind"` // "event"
		Event *session.Event `json:"event"`
	}
)

// userArtifactsSession is the session through which a user's own
// artifacts are reached when they have no session: user: names are seen
// from every session ID, existing or not.
const userArtifactsSession = "user-archive"

// Write writes the archive of one user to w.
func Write(ctx context.Context, w io.Writer, svcs Services, appName, userID string) error {
	now := time.Now().UTC()
	ids, err := session.IDs(ctx, svcs.Sessions, appName, userID)
	if err != nil {
		return err
	}
	slices.Reverse(ids)   // oldest first: restored in this order, they list in the order they did
	var user bytes.Buffer // small: state, facts and artifacts' descriptions
	enc := json.NewEncoder(&user)
	enc.Encode(userLine{"user", Format, appName, userID, now, len(ids)})
	st, err := svcs.Sessions.UserState(ctx, appName, userID)
	if err != nil {
		return err
	}
	enc.Encode(userStateLine{"user_state", st})
	if svcs.Facts != nil {
		all, err := svcs.Facts.UserFacts(ctx, appName, userID)
		if err != nil {
			return err
		}
		for _, f := range all {
			enc.Encode(factLine{"fact", f})
		}
	}
	// Every artifact version is described before any file is written; the
	// files follow their sessions.
	files := map[string][]artifactLine{} // by session ID
	if svcs.Artifacts != nil {
		n := 0
		for i, id := range append(slices.Clone(ids), "") {
			from, own := id, func(name string) bool { return !strings.HasPrefix(name, artifacts.UserPrefix) }
			if id == "" { // the user's own, once
				from, own = userArtifactsSession, func(name string) bool { return strings.HasPrefix(name, artifacts.UserPrefix) }
			}
			list, err := svcs.Artifacts.List(ctx, appName, userID, from)
			if err != nil {
				return fmt.Errorf("listing artifacts of session %d: %w", i+1, err)
			}
			for _, latest := range list {
				if !own(latest.Name) {
					continue
				}
				versions, err := svcs.Artifacts.Versions(ctx, artifacts.Ref{AppName: appName, UserID: userID, SessionID: from, Name: latest.Name})
				if err != nil {
					return err
				}
				n++
				for _, v := range versions {
					line := artifactLine{"artifact", id, v, fmt.Sprintf("artifacts/%d/%d", n, v.Version)}
					files[id] = append(files[id], line)
					enc.Encode(line)
				}
			}
		}
	}

	tw := tar.NewWriter(w)
	file := func(name string, content []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(content)), ModTime: now}); err != nil {
			return err
		}
		_, err := tw.Write(content)
		return err
	}
	if err := file("user.jsonl", user.Bytes()); err != nil {
		return err
	}
	writeFiles := func(sessionID string) error {
		for _, a := range files[sessionID] {
			from := cmp.Or(sessionID, userArtifactsSession)
			info, body, err := svcs.Artifacts.Open(ctx, artifacts.Ref{AppName: appName, UserID: userID, SessionID: from, Name: a.Artifact.Name}, a.Artifact.Version)
			if err != nil {
				return err
			}
			err = tw.WriteHeader(&tar.Header{Name: a.File, Mode: 0o600, Size: info.Size, ModTime: info.CreatedAt})
			if err == nil {
				_, err = io.Copy(tw, body)
			}
			body.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	for i, id := range ids {
		got, err := svcs.Sessions.Get(ctx, &session.GetRequest{AppName: appName, UserID: userID, SessionID: id})
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		own := map[string]any{} // app: keys are every user's, user: keys are above
		for k, v := range got.Session.State().All() {
			if !strings.HasPrefix(k, hstate.KeyPrefixApp) && !strings.HasPrefix(k, hstate.KeyPrefixUser) {
				own[k] = v
			}
		}
		enc.Encode(sessionLine{"session", id, got.Session.Title(), own, got.Session.LastUpdateTime()})
		for ev := range got.Session.Events().All() {
			enc.Encode(eventLine{"event", ev})
		}
		if err := file(fmt.Sprintf("sessions/%d.jsonl", i+1), buf.Bytes()); err != nil {
			return err
		}
		if err := writeFiles(id); err != nil {
			return err
		}
	}
	if err := writeFiles(""); err != nil {
		return err
	}
	return tw.Close()
}
