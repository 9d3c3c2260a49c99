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
const snapshotMagic = "HECTOR-INDEX-2\n"

// olderSnapshotMagic began the snapshots of Hector before the index had one
// pipeline: still read as a valid file, whose index is built again.
const olderSnapshotMagic = "HECTOR-INDEX-1\n"

// snapshot is the in-process store: how its documents were made, how far
// along the change feed it is, and each owner's shards.
type snapshot struct {
	Fingerprint string
	Cursor      int64
	// VectorLag is how far behind Cursor background vectors are: a
	// difference, so that a snapshot without it (vectors written with the
	// terms) reads as none.
	VectorLag int64
	Terms     bool
	Dims      int
	Owners    []ownerSnapshot
}

type ownerSnapshot struct {
	App, User string
	Keyword   keywordSnapshot
	Vectors   []byte // the vector store's own export of the shard
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
	syncDir(filepath.Dir(f.path))
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
	if bytes.HasPrefix(raw, []byte(olderSnapshotMagic)) {
		return nil, errors.New("written by an older Hector in a format this one does not read")
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
