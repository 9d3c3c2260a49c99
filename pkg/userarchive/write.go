// Package userarchive moves everything Hector holds about one user in and
// out as one streamed tar archive: Write gives it to them (access on
// request), Restore writes it back into a deployment (moving a user).
//
//	user.jsonl             first: whose archive it is, in which format,
//	                       and which parts follow
//	sessions/<n>.jsonl     a session, oldest first: a line for the
//	                       session, then one per event, in order
//	<part>/…               then each store's part (userdata.Stores, those
//	                       not derived from the others), as it writes it:
//	                       user_state/, artifacts/, facts/
//	end.json               last: how many files came before it, so that
//	                       an archive cut between two files is known
//
// Every JSON line of user.jsonl and the sessions' files has a "kind".
// Restore reads formats 1 and 2 too, which held the user's state, facts
// and artifacts' descriptions in user.jsonl.
package userarchive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/session"
	hstate "github.com/hectormem/hector/pkg/state"
	"github.com/hectormem/hector/pkg/userdata"
)

// Format is the version of the archive's layout, in its first line.
const Format = 3

// Services are the stores a user is read from and written to.
type Services struct {
	userdata.Services
	// Forget removes everything of a user, as an erasure does: it undoes a
	// refused restore (the user held nothing before it). Without it, a
	// refused restore may leave part of the archive written, and says so.
	Forget func(ctx context.Context, appName, userID string) error
	// Imports, when set, records each restore while it writes, so that
	// two restores into one user cannot both write, and one a stop cuts
	// short is undone at the next start (UndoUnfinished).
	Imports Imports
	// Process names this process in the records of its imports, the same
	// from one run to the next and no other process's (its host and data
	// directory, which one process at a time owns).
	Process string
}

// The lines and files of an archive.
type (
	userLine struct {
		Kind       string    `json:"kind"` // "user"
		Format     int       `json:"format"`
		AppName    string    `json:"app_name"`
		UserID     string    `json:"user_id"`
		ExportedAt time.Time `json:"exported_at"`
		Sessions   int       `json:"sessions"`        // how many session files follow
		Parts      []string  `json:"parts,omitempty"` // the stores' parts after them
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
	endFile struct {
		Files int `json:"files"` // before it, user.jsonl included
	}
)

const (
	headFile = "user.jsonl"
	lastFile = "end.json"
)

// Write writes the archive of one user to w.
func Write(ctx context.Context, w io.Writer, svcs Services, appName, userID string) error {
	now := time.Now().UTC()
	ids, err := session.IDs(ctx, svcs.Sessions, appName, userID)
	if err != nil {
		return err
	}
	slices.Reverse(ids) // oldest first: restored in this order, they list in the order they did
	var parts []userdata.Store
	for _, st := range userdata.Stores(svcs.Services, appName, userID) {
		switch {
		case st.Derived:
		case st.Export == nil || st.Import == nil:
			return fmt.Errorf("store %s holds users' data and cannot put it in an archive", st.Name)
		default:
			parts = append(parts, st)
		}
	}
	tw := tar.NewWriter(w)
	files := 0
	put := func(name string, size int64, modTime time.Time, body io.Reader) error {
		files++
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: modTime}); err != nil {
			return err
		}
		_, err := io.Copy(tw, body)
		return err
	}
	putJSON := func(name string, lines ...any) error {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, l := range lines {
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
		return put(name, int64(buf.Len()), now, &buf)
	}

	head := userLine{"user", Format, appName, userID, now, len(ids), nil}
	for _, p := range parts {
		head.Parts = append(head.Parts, p.Name)
	}
	if err := putJSON(headFile, head); err != nil {
		return err
	}
	for i, id := range ids {
		got, err := svcs.Sessions.Get(ctx, &session.GetRequest{AppName: appName, UserID: userID, SessionID: id})
		if err != nil {
			return err
		}
		own := map[string]any{} // app: keys are every user's, user: keys are their store's
		for k, v := range got.Session.State().All() {
			if !strings.HasPrefix(k, hstate.KeyPrefixApp) && !strings.HasPrefix(k, hstate.KeyPrefixUser) {
				own[k] = v
			}
		}
		lines := []any{sessionLine{"session", id, got.Session.Title(), own, got.Session.LastUpdateTime()}}
		for ev := range got.Session.Events().All() {
			lines = append(lines, eventLine{"event", ev})
		}
		if err := putJSON(fmt.Sprintf("sessions/%d.jsonl", i+1), lines...); err != nil {
			return err
		}
	}
	for _, p := range parts {
		if err := p.Export(ctx, func(name string, size int64, modTime time.Time, body io.Reader) error {
			if !strings.HasPrefix(name, p.Name+"/") {
				return fmt.Errorf("store %s put %s, outside its part", p.Name, name)
			}
			return put(name, size, modTime, body)
		}); err != nil {
			return fmt.Errorf("exporting the user's %s: %w", p.Name, err)
		}
	}
	if err := putJSON(lastFile, endFile{Files: files}); err != nil {
		return err
	}
	return tw.Close()
}
