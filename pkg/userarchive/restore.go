package userarchive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/errkind"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/session"
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

// Owner is an archive's app and user.
type Owner struct {
	AppName string `json:"app_name"`
	UserID  string `json:"user_id"`
}

// Files read whole are bounded: user.jsonl (facts are a few thousand
// characters a scope, an artifact version's description is small) and a
// session's file.
const (
	maxUserFile    = 64 << 20
	maxSessionFile = 1 << 30
)

// Restore reads an archive Write wrote (maybe in another deployment, of
// another user ID) and writes it back as the user appName/userID, who must
// hold nothing yet: sessions keep their IDs, state, events (with their IDs
// and times) and order; facts every version; artifacts every version with
// its content, type, metadata and creation time.
//
// The archive is read as it streams and checked as it goes: a malformed
// or truncated one is refused with ErrInvalidArgument naming what is
// wrong, and a refused restore leaves nothing: what it wrote before the
// fault showed is forgotten again (svcs.Forget). Facts are recorded as
// imported by by (see facts.Service.Restore).
func Restore(ctx context.Context, r io.Reader, svcs Services, appName, userID, by string) (*Summary, error) {
	tr := tar.NewReader(r)
	h, err := tr.Next()
	if err != nil || h.Name != "user.jsonl" {
		return nil, bad("it does not start with user.jsonl (%s): is it an archive from GET …/users/{user}/export?", errOr(err, "it starts with "+nameOf(h)))
	}
	if h.Size > maxUserFile {
		return nil, bad("its user.jsonl is %d MiB, over the limit of %d MiB", h.Size>>20, maxUserFile>>20)
	}
	user, err := readUserFile(tr)
	if err != nil {
		return nil, err
	}
	if len(user.facts) > 0 && svcs.Facts == nil {
		return nil, bad("it holds %d fact versions, and this deployment keeps no facts", len(user.facts))
	}
	if len(user.files) > 0 && svcs.Artifacts == nil {
		return nil, bad("it holds %d artifact versions, and this deployment keeps no artifacts", len(user.files))
	}
	if err := checkEmpty(ctx, svcs, appName, userID); err != nil {
		return nil, err
	}

	sum, err := restore(ctx, tr, user, svcs, appName, userID, by)
	if err != nil {
		// The user held nothing before: forgetting them again undoes it all.
		if svcs.Forget == nil {
			return nil, fmt.Errorf("%w; the restore stopped part-way: erase the user and restore again", err)
		}
		if ferr := svcs.Forget(context.WithoutCancel(ctx), appName, userID); ferr != nil {
			return nil, fmt.Errorf("%w; and undoing what the restore wrote failed: erase the user (%v)", err, ferr)
		}
		return nil, err
	}
	return sum, nil
}

// restore writes what the archive holds past user.jsonl, which it has read.
func restore(ctx context.Context, tr *tar.Reader, user *userFile, svcs Services, appName, userID, by string) (*Summary, error) {
	sum := &Summary{From: user.from}
	if len(user.state) > 0 {
		if err := svcs.Sessions.UpdateUserState(ctx, appName, userID, user.state); err != nil {
			return nil, err
		}
		sum.UserStateKeys = len(user.state)
	}
	if len(user.facts) > 0 {
		if err := svcs.Facts.Restore(ctx, appName, userID, by, user.facts); err != nil {
			return nil, err
		}
		sum.FactVersions = len(user.facts)
	}
	restorer, _ := svcs.Sessions.(session.Restorer)
	seen, restored := map[string]bool{}, map[string]bool{} // file names, session IDs
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
		switch a, isArtifact := user.files[h.Name]; {
		case isArtifact:
			if err := restoreArtifact(ctx, svcs.Artifacts, appName, userID, a, tr); err != nil {
				return nil, fmt.Errorf("%s: %w", h.Name, err)
			}
			sum.ArtifactVersions++
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
		default:
			return nil, bad("it holds %s, which user.jsonl does not describe", h.Name)
		}
	}
	for name := range user.files {
		if !seen[name] {
			return nil, bad("it ends without %s, which user.jsonl describes", name)
		}
	}
	if user.sessions >= 0 && sum.Sessions != user.sessions {
		return nil, bad("it ends after %d of the %d sessions user.jsonl counts: is it cut short?", sum.Sessions, user.sessions)
	}
	return sum, nil
}

// userFile is what user.jsonl holds.
type userFile struct {
	from     Owner
	sessions int // how many session files follow; -1 when the format does not say
	state    map[string]any
	facts    []facts.ScopedFact
	files    map[string]artifactLine // by file name
}

func readUserFile(r io.Reader) (*userFile, error) {
	u := &userFile{files: map[string]artifactLine{}}
	n, err := eachLine(r, func(n int, kind string, raw []byte) error {
		if n == 1 {
			var head userLine
			if kind != "user" || json.Unmarshal(raw, &head) != nil {
				return fmt.Errorf(`its first line is not {"kind":"user",…}`)
			}
			if head.Format != 1 && head.Format != Format {
				return fmt.Errorf("it is in format %d, and this Hector reads formats 1 and %d", head.Format, Format)
			}
			u.from, u.sessions = Owner{head.AppName, head.UserID}, -1
			if head.Format >= 2 {
				u.sessions = head.Sessions
			}
			return nil
		}
		switch kind {
		case "user_state":
			var l userStateLine
			if err := json.Unmarshal(raw, &l); err != nil {
				return err
			}
			u.state = l.State
		case "fact":
			var l factLine
			if err := json.Unmarshal(raw, &l); err != nil {
				return err
			}
			u.facts = append(u.facts, l.Fact)
		case "artifact":
			var l artifactLine
			if err := json.Unmarshal(raw, &l); err != nil {
				return err
			}
			if l.Artifact == nil || !strings.HasPrefix(l.File, "artifacts/") {
				return fmt.Errorf("an artifact line needs the artifact and a file under artifacts/")
			}
			if _, dup := u.files[l.File]; dup {
				return fmt.Errorf("file %s is described twice", l.File)
			}
			u.files[l.File] = l
		default:
			return fmt.Errorf("kind %q is not one of user.jsonl's (user, user_state, fact, artifact)", kind)
		}
		return nil
	})
	if err != nil {
		return nil, bad("user.jsonl, line %d: %v", n, err)
	}
	if n == 0 {
		return nil, bad("user.jsonl is empty")
	}
	return u, nil
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

// restoreArtifact saves one version from body, which must match its description.
func restoreArtifact(ctx context.Context, store artifacts.Service, appName, userID string, a artifactLine, body io.Reader) error {
	ref := artifacts.Ref{AppName: appName, UserID: userID, SessionID: cmp.Or(a.SessionID, userArtifactsSession), Name: a.Artifact.Name}
	if (a.SessionID == "") != strings.HasPrefix(ref.Name, artifacts.UserPrefix) {
		return bad("artifact %q: a user: artifact has no session ID, and a session's has one", ref.Name)
	}
	checked := &matching{r: body, h: sha256.New(), want: a.Artifact}
	_, err := store.Save(ctx, &artifacts.SaveRequest{Ref: ref, MimeType: a.Artifact.MimeType, Metadata: a.Artifact.Metadata,
		Body: checked, CreatedAt: a.Artifact.CreatedAt})
	return err
}

// matching reads a file and fails at its end, before the store keeps it,
// if it is not the content described.
type matching struct {
	r    io.Reader
	h    hash.Hash
	n    int64
	want *artifacts.Info
}

func (m *matching) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if err != nil && err != io.EOF { // the archive ends inside the file, or breaks there
		return n, bad("reading artifact %q: %v", m.want.Name, err)
	}
	m.h.Write(p[:n])
	m.n += int64(n)
	if err == io.EOF && (m.n != m.want.Size || hex.EncodeToString(m.h.Sum(nil)) != m.want.SHA256) {
		return n, bad("its content is not the %d bytes with the SHA-256 user.jsonl gives", m.want.Size)
	}
	return n, err
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: the archive is not one this Hector can restore: "+format, append([]any{errkind.InvalidArgument}, args...)...)
}

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
func checkEmpty(ctx context.Context, svcs Services, appName, userID string) error {
	held := func(what string) error {
		return fmt.Errorf("%w: user %q of app %q has %s: erase the user first (DELETE /v1/apps/%s/users/%s), or restore under another user ID",
			ErrUserNotEmpty, userID, appName, what, appName, userID)
	}
	list, err := svcs.Sessions.List(ctx, &session.ListRequest{AppName: appName, UserID: userID, PageSize: 1})
	if err != nil {
		return err
	}
	if len(list.Sessions) > 0 {
		return held("sessions")
	}
	st, err := svcs.Sessions.UserState(ctx, appName, userID)
	if err != nil {
		return err
	}
	if len(st) > 0 {
		return held("user: state")
	}
	if svcs.Facts != nil {
		all, err := svcs.Facts.UserFacts(ctx, appName, userID)
		if err != nil {
			return err
		}
		if len(all) > 0 {
			return held("facts")
		}
	}
	if svcs.Artifacts != nil {
		own, err := svcs.Artifacts.List(ctx, appName, userID, userArtifactsSession)
		if err != nil && !errors.Is(err, artifacts.ErrNotFound) {
			return err
		}
		if len(own) > 0 {
			return held("artifacts")
		}
	}
	return nil
}
