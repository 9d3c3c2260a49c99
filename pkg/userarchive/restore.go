package userarchive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/errkind"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/userdata"
)

// ErrUserNotEmpty: the user to restore into holds something already; nothing
// was written.
var ErrUserNotEmpty = errkind.New(errkind.AlreadyExists, "the user already has data here")

// Summary says what a restore wrote, and whose archive it was.
type Summary struct {
	From             Owner `json:"from"`
	Sessions         int   `json:"sessions"`
	Events           int   `json:"events"`
	UserStateKeys    int   `json:"user_state_keys"`
	FactVersions     int   `json:"fact_versions"`
	ArtifactVersions int   `json:"artifact_versions"`
}

// count is where a store's part's count goes in the summary.
func (s *Summary) count(store string) *int {
	switch store {
	case userdata.UserState:
		return &s.UserStateKeys
	case userdata.Facts:
		return &s.FactVersions
	case userdata.Artifacts:
		return &s.ArtifactVersions
	}
	return new(int)
}

// Owner is an archive's app and user.
type Owner struct {
	AppName string `json:"app_name"`
	UserID  string `json:"user_id"`
}

// Files read whole are bounded: user.jsonl (in formats 1 and 2 it held
// the facts, a few thousand characters a scope, and the artifacts'
// descriptions) and a session's file.
const (
	maxUserFile    = 64 << 20
	maxSessionFile = 1 << 30
)

// Restore reads an archive Write wrote (maybe in another deployment, of
// another user ID) and writes it back as the user appName/userID, who must
// hold nothing yet: sessions keep their IDs, state, events (with their IDs
// and times) and order, and each store's part is written back by the
// store (facts every version, artifacts every version with its content).
//
// The archive is read as it streams and checked as it goes: a malformed
// or truncated one is refused with userdata.ErrBadArchive naming what is
// wrong, and a refused restore leaves nothing: what it wrote before the
// fault showed is forgotten again (svcs.Forget). Facts are recorded as
// imported by by (see facts.Service.Restore).
func Restore(ctx context.Context, r io.Reader, svcs Services, appName, userID, by string) (*Summary, error) {
	tr := tar.NewReader(r)
	h, err := tr.Next()
	if err != nil || h.Name != headFile {
		return nil, bad("it does not start with user.jsonl (%s): is it an archive from GET …/users/{user}/export?", errOr(err, "it starts with "+nameOf(h)))
	}
	if h.Size > maxUserFile {
		return nil, bad("its user.jsonl is %d MiB, over the limit of %d MiB", h.Size>>20, maxUserFile>>20)
	}
	head, legacy, err := readHead(tr)
	if err != nil {
		return nil, err
	}
	stores := map[string]userdata.Store{}
	for _, st := range userdata.Stores(svcs.Services, appName, userID) {
		if !st.Derived {
			stores[st.Name] = st
		}
	}
	for _, part := range head.Parts {
		if _, ok := stores[part]; !ok {
			return nil, bad("it holds the user's %s, and this deployment keeps none", part)
		}
	}
	if err := checkEmpty(ctx, svcs.Sessions, stores, appName, userID); err != nil {
		return nil, err
	}
	recorded, err := claim(ctx, svcs, stores, appName, userID, by)
	if err != nil {
		return nil, err
	}
	defer recorded.stop()

	sum, err := restore(ctx, tr, head, legacy, svcs, stores, appName, userID, by)
	if err != nil {
		// The user held nothing before: forgetting them again undoes it all.
		if svcs.Forget == nil {
			return nil, fmt.Errorf("%w; the restore stopped part-way: erase the user and restore again", err)
		}
		if ferr := svcs.Forget(context.WithoutCancel(ctx), appName, userID); ferr != nil {
			// The record stays: the next start undoes it.
			return nil, fmt.Errorf("%w; and undoing what the restore wrote failed: erase the user (%v)", err, ferr)
		}
	}
	if rerr := recorded.release(); rerr != nil && err == nil {
		return nil, fmt.Errorf("the user is restored, but forgetting the record of the restore failed (the next start would undo it: erase the user and import again): %w", rerr)
	}
	return sum, err
}

// record is a restore's record in Imports, renewed while it writes.
type record struct {
	imports   Imports
	app, user string
	stop      func() // stops the renewing
	ctx       context.Context
}

// claim records a restore into a user found empty: a second one into the
// same user is refused, and the user is looked at again once the record
// is made, for a restore that ended in between.
func claim(ctx context.Context, svcs Services, stores map[string]userdata.Store, appName, userID, by string) (*record, error) {
	r := &record{imports: svcs.Imports, app: appName, user: userID, stop: func() {}, ctx: context.WithoutCancel(ctx)}
	if r.imports == nil {
		return r, nil
	}
	im := Import{AppName: appName, UserID: userID, By: by, Process: svcs.Process, Beat: time.Now()}
	if err := r.imports.Claim(ctx, im); err != nil {
		if errors.Is(err, ErrImportRunning) {
			return nil, fmt.Errorf("%w: user %q of app %q is being imported into; wait for that import to end", err, userID, appName)
		}
		return nil, err
	}
	if err := checkEmpty(ctx, svcs.Sessions, stores, appName, userID); err != nil {
		r.release()
		return nil, err
	}
	im.Writing = true
	if err := r.beat(im); err != nil {
		r.release()
		return nil, err
	}
	ticking, stop := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ImportBeat)
		defer tick.Stop()
		for {
			select {
			case <-ticking.Done():
				return
			case <-tick.C:
				r.beat(im) // one missed beat is not yet a stop (StaleAfter)
			}
		}
	}()
	r.stop = func() { stop(); <-done }
	return r, nil
}

func (r *record) beat(im Import) error {
	im.Beat = time.Now()
	return r.imports.Beat(r.ctx, im)
}

// release forgets the record once the restore is done or undone.
func (r *record) release() error {
	r.stop()
	if r.imports == nil {
		return nil
	}
	return r.imports.Release(r.ctx, r.app, r.user)
}

// restore writes what the archive holds past user.jsonl, which it has read.
func restore(ctx context.Context, tr *tar.Reader, head *userLine, legacy *legacyUser, svcs Services, stores map[string]userdata.Store,
	appName, userID, by string) (*Summary, error) {
	sum := &Summary{From: Owner{head.AppName, head.UserID}}
	importers := map[string]userdata.Importer{}
	importer := func(name string) (userdata.Importer, bool) {
		part, _, _ := strings.Cut(name, "/")
		st, ok := stores[part]
		if !ok || !slices.Contains(head.Parts, part) {
			return userdata.Importer{}, false
		}
		if _, started := importers[part]; !started {
			importers[part] = st.Import(ctx, by)
		}
		return importers[part], true
	}
	if legacy != nil {
		if err := legacy.start(ctx, importer); err != nil {
			return nil, err
		}
	}
	restorer, _ := svcs.Sessions.(session.Restorer)
	seen, restored := map[string]bool{}, map[string]bool{} // file names, session IDs
	files := 1
	var end *endFile
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bad("reading it: %v", err)
		}
		if seen[h.Name] {
			return nil, bad("it holds %s twice", h.Name)
		}
		seen[h.Name] = true
		if end != nil {
			return nil, bad("it holds %s after end.json, which ends it", h.Name)
		}
		switch imp, isPart := importer(h.Name); {
		case h.Name == lastFile && legacy == nil:
			end = &endFile{Files: -1}
			json.NewDecoder(io.LimitReader(tr, 1<<10)).Decode(end)
		case strings.HasPrefix(h.Name, "sessions/") && strings.HasSuffix(h.Name, ".jsonl"):
			if restorer == nil {
				return nil, bad("this deployment's session store cannot restore sessions")
			}
			if h.Size > maxSessionFile {
				return nil, bad("%s is %d MiB, over the limit of %d MiB", h.Name, h.Size>>20, maxSessionFile>>20)
			}
			req, err := readSessionFile(tr, appName, userID)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", h.Name, err)
			}
			if restored[req.SessionID] {
				return nil, bad("%s: session %q is in it twice", h.Name, req.SessionID)
			}
			restored[req.SessionID] = true
			s, err := restorer.Restore(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", h.Name, err)
			}
			if svcs.Index != nil {
				svcs.Index.Index(ctx, s) // a courtesy: the change feed makes up for a failure
			}
			sum.Sessions++
			sum.Events += len(req.Events)
		case legacy != nil:
			if err := legacy.file(ctx, h.Name, tr, imp, isPart); err != nil {
				return nil, err
			}
		case isPart:
			if err := imp.File(ctx, h.Name, tr); err != nil {
				return nil, fmt.Errorf("%s: %w", h.Name, err)
			}
		default:
			return nil, bad("it holds %s, which is no part it announces (%s)", h.Name, strings.Join(append([]string{"sessions"}, head.Parts...), ", "))
		}
		files++
	}
	if legacy != nil {
		if err := legacy.end(seen); err != nil {
			return nil, err
		}
	}
	for part, imp := range importers { // first: they say best what is missing
		n, err := imp.Done(ctx)
		if err != nil {
			return nil, err
		}
		*sum.count(part) = n
	}
	if head.Sessions >= 0 && sum.Sessions != head.Sessions {
		return nil, bad("it ends after %d of the %d sessions user.jsonl counts: is it cut short?", sum.Sessions, head.Sessions)
	}
	switch {
	case legacy != nil:
	case end == nil:
		return nil, bad("it ends before end.json, after %d files: is it cut short?", files)
	case end.Files != files-1:
		return nil, bad("its end.json does not count the %d files before it", files-1)
	}
	return sum, nil
}

// readHead reads user.jsonl: in format 3 its one line; in formats 1 and 2
// the user's state, facts and artifacts' descriptions too.
func readHead(r io.Reader) (*userLine, *legacyUser, error) {
	var head userLine
	var legacy *legacyUser
	n, err := eachLine(r, func(n int, kind string, raw []byte) error {
		if n == 1 {
			if kind != "user" || json.Unmarshal(raw, &head) != nil {
				return fmt.Errorf(`its first line is not {"kind":"user",…}`)
			}
			switch head.Format {
			case Format:
			case 1, 2:
				legacy = newLegacyUser(&head)
			default:
				return fmt.Errorf("it is in format %d, and this Hector reads formats 1 to %d", head.Format, Format)
			}
			return nil
		}
		if legacy == nil {
			return fmt.Errorf("user.jsonl holds one line in format %d", Format)
		}
		return legacy.line(kind, raw)
	})
	if err != nil {
		return nil, nil, bad("user.jsonl, line %d: %v", n, err)
	}
	if n == 0 {
		return nil, nil, bad("user.jsonl is empty")
	}
	if legacy != nil {
		head.Parts = legacy.parts()
	}
	return &head, legacy, nil
}

// readSessionFile reads a session's file as the session to restore as the
// given user.
func readSessionFile(r io.Reader, appName, userID string) (*session.RestoreRequest, error) {
	req := &session.RestoreRequest{AppName: appName, UserID: userID}
	n, err := eachLine(r, func(n int, kind string, raw []byte) error {
		switch {
		case n == 1:
			var l sessionLine
			if kind != "session" || json.Unmarshal(raw, &l) != nil {
				return fmt.Errorf(`its first line is not {"kind":"session",…}`)
			}
			req.SessionID, req.Title, req.State, req.LastUpdateTime = l.ID, l.Title, l.State, l.LastUpdateTime
		case kind == "event":
			var l eventLine
			if err := json.Unmarshal(raw, &l); err != nil {
				return err
			}
			if l.Event == nil {
				return fmt.Errorf("an event line without its event")
			}
			req.Events = append(req.Events, l.Event)
		default:
			return fmt.Errorf("kind %q is not one of a session file's (session, event)", kind)
		}
		return nil
	})
	if err != nil {
		return nil, bad("line %d: %v", n, err)
	}
	if n == 0 {
		return nil, bad("the file is empty")
	}
	return req, nil
}

// eachLine calls fn with each JSON line of r, numbered from 1, and its
// kind; it returns the number of the line it stopped at.
func eachLine(r io.Reader, fn func(n int, kind string, raw []byte) error) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxSessionFile) // a line is an event, whose size the session store bounds
	n := 0
	for sc.Scan() {
		n++
		raw := sc.Bytes()
		if len(bytes.TrimSpace(raw)) == 0 {
			n--
			continue
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return n, fmt.Errorf("not a JSON object: %v", err)
		}
		if err := fn(n, head.Kind, raw); err != nil {
			return n, err
		}
	}
	return n, sc.Err()
}

func bad(format string, args ...any) error { return userdata.Bad(format, args...) }

func errOr(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

func nameOf(h *tar.Header) string {
	if h == nil {
		return "nothing"
	}
	return h.Name
}

// checkEmpty refuses to restore into a user who holds something.
func checkEmpty(ctx context.Context, sessions session.Service, stores map[string]userdata.Store, appName, userID string) error {
	held := func(what string) error {
		return fmt.Errorf("%w: user %q of app %q has %s: erase the user first (DELETE /v1/apps/%s/users/%s), or restore under another user ID",
			ErrUserNotEmpty, userID, appName, what, appName, userID)
	}
	list, err := sessions.List(ctx, &session.ListRequest{AppName: appName, UserID: userID, PageSize: 1})
	if err != nil {
		return err
	}
	if len(list.Sessions) > 0 {
		return held(userdata.Sessions)
	}
	for name, st := range stores {
		n, err := st.Left(ctx)
		if err != nil && !errors.Is(err, errkind.NotFound) {
			return err
		}
		if n > 0 {
			return held(name)
		}
	}
	return nil
}
