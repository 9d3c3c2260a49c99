package artifacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hectormem/hector/internal/hashid"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// fsStore keeps artifacts in a directory:
//
//	blobs/ab/abcdef…            content, named by its SHA-256: identical bytes are stored once
//	meta/<owner>/<name>/<v>.data  a hard link to the version's blob
//	meta/<owner>/<name>/<v>.json  the version's description; its presence publishes the version
//	sessions/<user>/<session>     a session's ID, while the session holds artifacts
//	tmp/                          uploads in progress
//
// <owner> and <name> are SHA-256 hashes of the app, user and session (or
// user scope) and of the name, so no ID or name can shape a path; the
// sessions/ files name, for each user, the sessions whose <owner> to look
// in, so that erasing a user reaches every session's artifacts. A blob's
// link count says how many versions use it: the last one to go removes it.
// Every file is written to tmp/, fsynced, then renamed or linked into place,
// so a crash leaves no partial artifact visible.
type fsStore struct {
	options
	root string
	// mu orders publishing and deleting, which both decide a blob's fate by
	// its link count. Uploads stream into tmp/ without it.
	mu sync.Mutex
}

// NewFilesystem returns a Service storing artifacts under dir, which it
// creates. One process at a time should own dir. Uploads that died (their
// files in tmp/) and versions whose publishing was cut short are removed.
func NewFilesystem(dir string, opts ...Option) (Service, error) {
	s := &fsStore{options: newOptions(opts), root: dir}
	for _, d := range []string{"blobs", "meta", "sessions", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o750); err != nil {
			return nil, fmt.Errorf("artifacts: creating the artifact directory: %w", err)
		}
	}
	if err := s.recover(); err != nil {
		return nil, fmt.Errorf("artifacts: cleaning up %s after a crash: %w", dir, err)
	}
	return s, nil
}

// recover removes what a crash can leave behind: temp files, data links of
// versions that were never published, and blobs that no version uses.
func (s *fsStore) recover() error {
	if err := os.RemoveAll(filepath.Join(s.root, "tmp")); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(s.root, "tmp"), 0o750); err != nil {
		return err
	}
	err := filepath.WalkDir(filepath.Join(s.root, "meta"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".data") {
			return err
		}
		if _, err := os.Stat(strings.TrimSuffix(path, ".data") + ".json"); errors.Is(err, fs.ErrNotExist) {
			return os.Remove(path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return filepath.WalkDir(filepath.Join(s.root, "blobs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return s.removeIfUnused(path)
	})
}

func (s *fsStore) ownerDir(o owner) string {
	scope := "session:" + o.session
	if o.session == "" {
		scope = "user"
	}
	return filepath.Join(s.root, "meta", hashid.Hex(o.app, o.user, scope))
}

// sessionFile names a session among its user's sessions with artifacts.
func (s *fsStore) sessionFile(o owner) string {
	return filepath.Join(s.root, "sessions", hashid.Hex(o.app, o.user), hashid.Hex(o.session))
}

func (s *fsStore) nameDir(o owner, name string) string {
	return filepath.Join(s.ownerDir(o), hashid.Hex(name))
}

func (s *fsStore) blobPath(digest string) string {
	return filepath.Join(s.root, "blobs", digest[:2], digest)
}

func versionFile(dir string, version int64, ext string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", version, ext))
}

func (s *fsStore) Save(ctx context.Context, req *SaveRequest) (*Info, error) {
	o, meta, c, err := s.upload(req)
	if err != nil {
		return nil, err
	}
	tmp, err := s.writeTemp(func(w io.Writer) error { _, err := io.Copy(w, c); return err })
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp) // a no-op once it has been moved into place
	metadata, _ := decodeMetadata(meta)
	info := &Info{Name: req.Name, MimeType: c.mimeType, Size: c.size, SHA256: c.digest(), Metadata: metadata}

	s.mu.Lock()
	defer s.mu.Unlock()
	blob := s.blobPath(info.SHA256)
	if _, err := os.Stat(blob); errors.Is(err, fs.ErrNotExist) {
		if err := s.moveInto(tmp, blob); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if err := s.noteSession(o); err != nil {
		return nil, err
	}
	dir := s.nameDir(o, req.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	versions, err := versionsIn(dir)
	if err != nil {
		return nil, err
	}
	info.Version = 1
	if len(versions) > 0 {
		info.Version = versions[len(versions)-1] + 1
	}
	// Link the content first and publish the description last: a crash in
	// between leaves a .data file that recover removes, never a half version.
	for errors.Is(os.Link(blob, versionFile(dir, info.Version, ".data")), fs.ErrExist) {
		info.Version++ // left over from a crash: skip the number
	}
	info.CreatedAt = req.createdAt()
	desc, err := s.writeTemp(func(w io.Writer) error { return json.NewEncoder(w).Encode(info) })
	if err == nil {
		defer os.Remove(desc)
		err = os.Link(desc, versionFile(dir, info.Version, ".json"))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		os.Remove(versionFile(dir, info.Version, ".data"))
		s.removeIfUnused(blob)
		return nil, fmt.Errorf("artifacts: publishing %q: %w", req.Name, err)
	}
	return info, nil
}

// noteSession records, before its first version is written, that a
// session holds artifacts. Callers hold s.mu.
func (s *fsStore) noteSession(o owner) error {
	if o.session == "" {
		return nil
	}
	file := s.sessionFile(o)
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := s.writeTemp(func(w io.Writer) error { _, err := io.WriteString(w, o.session); return err })
	if err != nil {
		return err
	}
	return s.moveInto(tmp, file)
}

func (s *fsStore) Sessions(ctx context.Context, appName, userID string) ([]string, error) {
	if err := validateView(appName, userID, ""); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.root, "sessions", hashid.Hex(appName, userID))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		id, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, string(id))
	}
	slices.Sort(out)
	return out, nil
}

// writeTemp writes a file in tmp/ with fill and fsyncs it.
func (s *fsStore) writeTemp(fill func(io.Writer) error) (string, error) {
	f, err := os.CreateTemp(filepath.Join(s.root, "tmp"), "upload-*")
	if err != nil {
		return "", fmt.Errorf("artifacts: %w", err)
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// moveInto renames a synced temp file to path and makes the rename durable.
func (s *fsStore) moveInto(tmp, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// versionsIn lists the published versions in a name's directory, ascending.
func versionsIn(dir string) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var versions []int64
	for _, e := range entries {
		if v, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				versions = append(versions, n)
			}
		}
	}
	slices.Sort(versions)
	return versions, nil
}

func readInfo(dir string, version int64) (*Info, error) {
	raw, err := os.ReadFile(versionFile(dir, version, ".json"))
	if err != nil {
		return nil, err
	}
	var info Info
	if err := json.Unmarshal(raw, &info); err != nil {
		return nil, fmt.Errorf("artifacts: reading %s: %w", versionFile(dir, version, ".json"), err)
	}
	return &info, nil
}

func (s *fsStore) Open(ctx context.Context, ref Ref, version int64) (*Info, io.ReadCloser, error) {
	o, err := resolve(ref)
	if err != nil {
		return nil, nil, err
	}
	if version < 0 {
		return nil, nil, invalid("version %d is negative", version)
	}
	dir := s.nameDir(o, ref.Name)
	if version == 0 {
		versions, err := versionsIn(dir)
		if err != nil {
			return nil, nil, err
		}
		if len(versions) == 0 {
			return nil, nil, notFound(ref, 0)
		}
		version = versions[len(versions)-1]
	}
	info, err := readInfo(dir, version)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, notFound(ref, version)
	} else if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(versionFile(dir, version, ".data"))
	if err != nil {
		return nil, nil, fmt.Errorf("artifacts: opening %q version %d: %w", ref.Name, version, err)
	}
	return info, f, nil
}

func (s *fsStore) List(ctx context.Context, appName, userID, sessionID string) ([]*Info, error) {
	if err := validateView(appName, userID, sessionID); err != nil {
		return nil, err
	}
	var out []*Info
	owners := []owner{{appName, userID, ""}}
	if sessionID != "" {
		owners = append(owners, owner{appName, userID, sessionID})
	}
	for _, o := range owners {
		names, err := os.ReadDir(s.ownerDir(o))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		for _, n := range names {
			dir := filepath.Join(s.ownerDir(o), n.Name())
			versions, err := versionsIn(dir)
			if err != nil {
				return nil, err
			}
			if len(versions) == 0 {
				continue
			}
			info, err := readInfo(dir, versions[len(versions)-1])
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b *Info) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *fsStore) Versions(ctx context.Context, ref Ref) ([]*Info, error) {
	o, err := resolve(ref)
	if err != nil {
		return nil, err
	}
	dir := s.nameDir(o, ref.Name)
	versions, err := versionsIn(dir)
	if err != nil {
		return nil, err
	}
	if len(versions) == 0 {
		return nil, notFound(ref, 0)
	}
	out := make([]*Info, len(versions))
	for i, v := range versions {
		if out[i], err = readInfo(dir, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *fsStore) Delete(ctx context.Context, ref Ref) error {
	o, err := resolve(ref)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := s.nameDir(o, ref.Name)
	if versions, err := versionsIn(dir); err != nil {
		return err
	} else if len(versions) == 0 {
		return notFound(ref, 0)
	}
	if err := s.removeNames(dir); err != nil {
		return err
	}
	if o.session != "" && os.Remove(s.ownerDir(o)) == nil { // its last name: the session holds none now
		if err := os.Remove(s.sessionFile(o)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (s *fsStore) DeleteSession(ctx context.Context, appName, userID, sessionID string) error {
	if err := validateSession(appName, userID, sessionID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := owner{appName, userID, sessionID}
	names, err := os.ReadDir(s.ownerDir(o))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, n := range names {
		if err := s.removeNames(filepath.Join(s.ownerDir(o), n.Name())); err != nil {
			return err
		}
	}
	if err := os.Remove(s.ownerDir(o)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// Last: a stop before it leaves the session listed, to be deleted again.
	if err := os.Remove(s.sessionFile(o)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeNames deletes a name's directory: descriptions first, so no version
// is visible without its content, then content links, then unused blobs.
// Callers hold s.mu.
func (s *fsStore) removeNames(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var blobs []string
	for _, suffix := range []string{".json", ".data"} {
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), suffix) {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if suffix == ".json" {
				if info, err := readInfo(dir, mustVersion(e.Name())); err == nil {
					blobs = append(blobs, s.blobPath(info.SHA256))
				}
			}
			if err := os.Remove(path); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(dir); err != nil {
		return err
	}
	for _, b := range blobs {
		if err := s.removeIfUnused(b); err != nil {
			return err
		}
	}
	return nil
}

func mustVersion(file string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(file, filepath.Ext(file)), 10, 64)
	return n
}

// removeIfUnused deletes a blob no version links to any more.
func (s *fsStore) removeIfUnused(blob string) error {
	fi, err := os.Stat(blob)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if links(fi) <= 1 {
		return os.Remove(blob)
	}
	return nil
}
