package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// A snapshot file is a magic line, a gob-encoded snapshot and the SHA-256
// of that encoding, so a torn or corrupted file is detected, never half-read.
const snapshotMagic = "HECTOR-INDEX-1\n"

type snapshot struct {
	Kind        Kind
	Fingerprint string
	Cursor      int64
	Marks       []markRecord
	Payload     []byte
}

type markRecord struct {
	App, User, Session string
	Seq                int64
}

type snapshotFile struct{ path string }

func (f *snapshotFile) write(s *snapshot) error {
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(s); err != nil {
		return err
	}
	sum := sha256.Sum256(body.Bytes())
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".snapshot-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(snapshotMagic)
	if err == nil {
		_, err = tmp.Write(body.Bytes())
	}
	if err == nil {
		_, err = tmp.Write(sum[:])
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		return fmt.Errorf("index: writing snapshot %s: %w", f.path, err)
	}
	if dir, err := os.Open(filepath.Dir(f.path)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}

// errNoSnapshot: there is no snapshot file yet.
var errNoSnapshot = errors.New("no snapshot")

func (f *snapshotFile) read() (*snapshot, error) {
	raw, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoSnapshot
	} else if err != nil {
		return nil, err
	}
	body, ok := bytes.CutPrefix(raw, []byte(snapshotMagic))
	if !ok || len(body) < sha256.Size {
		return nil, errors.New("not a Hector index snapshot")
	}
	body, sum := body[:len(body)-sha256.Size], body[len(body)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch: the file is damaged")
	}
	var s snapshot
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&s); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	return &s, nil
}

// Save writes the index to its snapshot file (a no-op when not persisted).
// Changes wait while it runs, so the snapshot is consistent.
func (c *Index) Save() error {
	if c.persist == nil {
		return nil
	}
	c.swapMu.Lock()
	defer c.swapMu.Unlock()
	c.mu.RLock()
	defer c.mu.RUnlock()
	payload, err := c.engine.snapshot(c.shards)
	if err != nil {
		return fmt.Errorf("index: snapshotting: %w", err)
	}
	s := &snapshot{Kind: c.kind, Fingerprint: c.engine.fingerprint(), Cursor: c.cursor, Payload: payload}
	for ref, seq := range c.marks {
		s.Marks = append(s.Marks, markRecord{ref.app, ref.user, ref.id, seq})
	}
	return c.persist.write(s)
}

// load restores the snapshot, if there is a usable one. Only an unreadable
// directory is fatal: a missing or damaged snapshot means starting empty,
// and CatchUp then rebuilds from the session service.
func (c *Index) load() error {
	s, err := c.persist.read()
	switch {
	case errors.Is(err, errNoSnapshot):
		c.logger().Info("index: no snapshot yet; CatchUp will build the index from the sessions", "index", c.kind, "path", c.persist.path)
		return nil
	case err != nil:
		if _, statErr := os.Stat(filepath.Dir(c.persist.path)); statErr != nil {
			return fmt.Errorf("index: snapshot directory: %w", statErr)
		}
		c.logger().Warn("index: snapshot unusable; CatchUp will rebuild the index from the sessions", "index", c.kind, "path", c.persist.path, "error", err)
		return nil
	case s.Kind != c.kind:
		c.logger().Warn("index: snapshot is of another index type; CatchUp will rebuild the index from the sessions", "index", c.kind, "snapshot", s.Kind)
		return nil
	case s.Fingerprint != c.engine.fingerprint():
		c.stale = fmt.Errorf("%w: it was built with %s and is configured with %s", ErrNeedsRebuild, s.Fingerprint, c.engine.fingerprint())
		c.logger().Error("index: built differently from its configuration", "index", c.kind, "error", c.stale)
		return nil
	}
	shards, err := c.engine.restore(s.Payload)
	if err != nil {
		c.logger().Warn("index: snapshot unusable; CatchUp will rebuild the index from the sessions", "index", c.kind, "error", err)
		return nil
	}
	c.shards, c.cursor = shards, s.Cursor
	for _, m := range s.Marks {
		c.marks[sessionRef{owner{m.App, m.User}, m.Session}] = m.Seq
	}
	return nil
}

// gobBytes and fromGob encode and decode an engine's or a store's part of
// a snapshot.
func gobBytes(v any) ([]byte, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(v)
	return buf.Bytes(), err
}

func fromGob(payload []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(payload)).Decode(v)
}
