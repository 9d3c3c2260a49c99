package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"

	"github.com/hectormem/hector/pkg/embed"
)

// cache is an embedder that keeps every vector it made in a file, one per
// model, and asks the model only for texts it has not seen. A record is
// the SHA-256 of the text (marked as a query or a passage: an asymmetric
// model embeds them differently) and the vector's values, little-endian;
// a record cut short by a crash is dropped when the file is opened.
type cache struct {
	model embed.Embedder

	mu      sync.Mutex
	vectors map[[sha256.Size]byte][]float32
	file    *os.File
	w       *bufio.Writer
}

func openCache(dir string, model embed.Embedder) (*cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := regexp.MustCompile(`[^A-Za-z0-9.-]+`).ReplaceAllString(model.Fingerprint(), "_") + ".vectors"
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	// Two runs appending to one file at once interleave their records, and
	// a text then reads another's vector: one run at a time.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use by another run (give it another -cache): %w", f.Name(), err)
	}
	c := &cache{model: model, vectors: map[[sha256.Size]byte][]float32{}, file: f}
	record := sha256.Size + 4*model.Dimensions()
	r := bufio.NewReader(f)
	buf := make([]byte, record)
	var good int64
	for {
		if _, err := io.ReadFull(r, buf); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			f.Close()
			return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
		}
		var key [sha256.Size]byte
		copy(key[:], buf)
		vec := make([]float32, model.Dimensions())
		for i := range vec {
			vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[sha256.Size+4*i:]))
		}
		c.vectors[key] = vec
		good += int64(record)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	c.w = bufio.NewWriter(f)
	return c, nil
}

func (c *cache) Dimensions() int          { return c.model.Dimensions() }
func (c *cache) Fingerprint() string      { return c.model.Fingerprint() }
func (c *cache) SimilarityFloor() float64 { return embed.SimilarityFloor(c.model) }

func (c *cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return c.embed(ctx, "passage", texts, c.model.Embed)
}

func (c *cache) EmbedQueries(ctx context.Context, queries []string) ([][]float32, error) {
	return c.embed(ctx, "query", queries, func(ctx context.Context, q []string) ([][]float32, error) {
		return embed.Queries(ctx, c.model, q)
	})
}

func (c *cache) embed(ctx context.Context, kind string, texts []string, fn func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	out := make([][]float32, len(texts))
	keys := make([][sha256.Size]byte, len(texts))
	var todo []string
	var at []int
	c.mu.Lock()
	for i, t := range texts {
		keys[i] = sha256.Sum256([]byte(kind + "\x00" + t))
		if v, ok := c.vectors[keys[i]]; ok {
			out[i] = slices.Clone(v)
		} else {
			todo, at = append(todo, t), append(at, i)
		}
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return out, nil
	}
	vecs, err := fn(ctx, todo)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, i := range at {
		out[i] = vecs[j]
		c.vectors[keys[i]] = slices.Clone(vecs[j])
		record := append(make([]byte, 0, sha256.Size+4*len(vecs[j])), keys[i][:]...)
		for _, v := range vecs[j] {
			record = binary.LittleEndian.AppendUint32(record, math.Float32bits(v))
		}
		c.w.Write(record) // an error stays in c.w, and close returns it
	}
	return out, nil
}

func (c *cache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.w.Flush(), c.file.Close())
}
