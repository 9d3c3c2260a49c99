package artifacts

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
)

// content wraps an upload: it detects the MIME type from the first bytes,
// hashes and counts what passes through, and fails with ErrTooLarge as soon
// as more than the limit has been read, so an oversized upload is refused
// without being read to the end. The failure is sticky: io.ReadFull, for
// one, drops an error that comes with a full buffer, and the next Read must
// fail again rather than read on.
type content struct {
	r     io.Reader
	hash  hash.Hash
	size  int64
	limit int64
	err   error
}

func newContent(body io.Reader, mimeType string, limit int64) (*content, string, error) {
	if body == nil {
		return nil, "", invalid("artifact body is nil")
	}
	br := bufio.NewReaderSize(body, 512)
	if mimeType == "" {
		head, err := br.Peek(512)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return nil, "", fmt.Errorf("artifacts: reading the upload: %w", err)
		}
		mimeType = http.DetectContentType(head)
	}
	return &content{r: br, hash: sha256.New(), limit: limit}, mimeType, nil
}

func (c *content) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.size += int64(n)
	c.hash.Write(p[:n])
	if c.size > c.limit {
		c.err = fmt.Errorf("%w: over the limit of %d bytes", ErrTooLarge, c.limit)
		return n, c.err
	}
	return n, err
}

func (c *content) digest() string { return hex.EncodeToString(c.hash.Sum(nil)) }
