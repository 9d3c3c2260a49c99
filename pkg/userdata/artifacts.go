package userdata

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/session"
)

// ArtifactFile describes one version of an artifact in an archive: the
// file "<name>.json" holds it, and "<name>" the content, next.
type ArtifactFile struct {
	SessionID string          `json:"session_id"` // "" for a user: artifact
	Artifact  *artifacts.Info `json:"artifact"`
}

// userArtifacts are the user's artifacts, their own (user:) and their
// sessions', every version. Erasure removes them all before the sessions
// go, those of sessions already deleted included, so that no stop can
// leave one behind a verified receipt.
func userArtifacts(store artifacts.Service, sessions session.Service, app, user string) Store {
	ref := func(sessionID, name string) artifacts.Ref { // "": the user's own
		return artifacts.Ref{AppName: app, UserID: user, SessionID: sessionID, Name: name}
	}
	// names lists the latest version of the artifacts of a session (""
	// for the user's own).
	names := func(ctx context.Context, sessionID string) ([]*artifacts.Info, error) {
		all, err := store.List(ctx, app, user, sessionID)
		if err != nil {
			return nil, err
		}
		return slices.DeleteFunc(all, func(a *artifacts.Info) bool {
			return strings.HasPrefix(a.Name, artifacts.UserPrefix) != (sessionID == "")
		}), nil
	}
	// each calls fn with every owner of the user's artifacts ("" for the
	// user's own) and the versions it holds.
	each := func(ctx context.Context, fn func(sessionID string, versions int) error) error {
		ids, err := store.Sessions(ctx, app, user)
		if err != nil {
			return err
		}
		for _, id := range append(ids, "") {
			latest, err := names(ctx, id)
			if err != nil {
				return err
			}
			n := 0
			for _, a := range latest {
				versions, err := store.Versions(ctx, ref(id, a.Name))
				if err != nil && !errors.Is(err, artifacts.ErrNotFound) { // deleted meanwhile otherwise
					return err
				}
				n += len(versions)
			}
			if err := fn(id, n); err != nil {
				return err
			}
		}
		return nil
	}
	return Store{Name: Artifacts, First: true,
		Forget: func(ctx context.Context) (int, error) {
			removed := 0
			err := each(ctx, func(id string, versions int) error {
				if id != "" {
					if err := store.DeleteSession(ctx, app, user, id); err != nil {
						return fmt.Errorf("erasing the artifacts of session %q: %w", id, err)
					}
					removed += versions
					return nil
				}
				own, err := names(ctx, "")
				if err != nil {
					return err
				}
				for _, a := range own {
					if err := store.Delete(ctx, ref("", a.Name)); err != nil && !errors.Is(err, artifacts.ErrNotFound) {
						return fmt.Errorf("erasing artifact %q: %w", a.Name, err)
					}
				}
				removed += versions
				return nil
			})
			return removed, err
		},
		Left: func(ctx context.Context) (int, error) {
			left := 0
			err := each(ctx, func(_ string, versions int) error { left += versions; return nil })
			return left, err
		},
		Export: func(ctx context.Context, put Put) error {
			ids, err := session.IDs(ctx, sessions, app, user)
			if err != nil {
				return err
			}
			n := 0
			for _, id := range append(ids, "") {
				latest, err := names(ctx, id)
				if err != nil {
					return err
				}
				for _, a := range latest {
					versions, err := store.Versions(ctx, ref(id, a.Name))
					if err != nil {
						return err
					}
					n++
					for _, v := range versions {
						name := fmt.Sprintf("%s/%d/%d", Artifacts, n, v.Version)
						desc, err := json.Marshal(ArtifactFile{id, v})
						if err != nil {
							return err
						}
						if err := put(name+".json", int64(len(desc)), v.CreatedAt, bytes.NewReader(desc)); err != nil {
							return err
						}
						info, body, err := store.Open(ctx, ref(id, a.Name), v.Version)
						if err != nil {
							return err
						}
						err = put(name, info.Size, info.CreatedAt, body)
						body.Close()
						if err != nil {
							return err
						}
					}
				}
			}
			return nil
		},
		Import: func(context.Context, string) Importer {
			var next string // the content file a description announced
			var pending *ArtifactFile
			saved := 0
			return Importer{
				File: func(ctx context.Context, name string, body io.Reader) error {
					if pending == nil {
						var desc ArtifactFile
						if !strings.HasSuffix(name, ".json") {
							return unexpected(name)
						}
						if err := decodeFile(name, body, &desc); err != nil {
							return err
						}
						if desc.Artifact == nil {
							return Bad("%s describes no artifact", name)
						}
						if (desc.SessionID == "") != strings.HasPrefix(desc.Artifact.Name, artifacts.UserPrefix) {
							return Bad("artifact %q: a user: artifact has no session ID, and a session's has one", desc.Artifact.Name)
						}
						next, pending = strings.TrimSuffix(name, ".json"), &desc
						return nil
					}
					if name != next {
						return Bad("it holds %s where %s should be", name, next)
					}
					a := pending.Artifact
					checked := &matching{r: body, h: sha256.New(), want: a}
					if _, err := store.Save(ctx, &artifacts.SaveRequest{Ref: ref(pending.SessionID, a.Name), MimeType: a.MimeType,
						Metadata: a.Metadata, Body: checked, CreatedAt: a.CreatedAt}); err != nil {
						return err
					}
					pending = nil
					saved++
					return nil
				},
				Done: func(context.Context) (int, error) {
					if pending != nil {
						return 0, Bad("it ends without %s, which %s.json describes", next, next)
					}
					return saved, nil
				},
			}
		},
	}
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
		return n, Bad("reading artifact %q: %v", m.want.Name, err)
	}
	m.h.Write(p[:n])
	m.n += int64(n)
	if err == io.EOF && (m.n != m.want.Size || hex.EncodeToString(m.h.Sum(nil)) != m.want.SHA256) {
		return n, Bad("artifact %q: its content is not the %d bytes with the SHA-256 its description gives", m.want.Name, m.want.Size)
	}
	return n, err
}
