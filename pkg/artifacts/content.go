package artifacts

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
)

// content wraps an upload: it detects the MIME type from the first bytes,
// hashes and counts what passes through, and fails with ErrTooLarge as soon
// as more than the limit has been read, so an oversized upload is refused
// without being read to the end. The failure is sticky: io.ReadFull, for
// one, drops an error that comes with a full buffer, and the next Read must
// fail again rather than read on.
type content struct {
	r        io.Reader
	mimeType string
	hash     hash.Hash
	size     int64
	limit    int64
	err      error
}

// upload checks a save request and returns where it goes, its encoded
// metadata and its content, ready to be read.
func (o options) upload(req *SaveRequest) (owner, string, *content, error) {
	if req == nil {
		return owner{}, "", nil, invalid("save request is nil")
	}
	own, err := resolve(req.Ref)
	if err != nil {
		return owner{}, "", nil, err
	}
	meta, err := encodeMetadata(req.Metadata)
	if err != nil {
		return owner{}, "", nil, err
	}
	if req.Body == nil {
		return owner{}, "", nil, invalid("artifact body is nil")
	}
	br := bufio.NewReaderSize(req.Body, 512)
	mimeType := req.MimeType
	if mimeType == "" {
		head, err := br.Peek(512)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return owner{}, "", nil, fmt.Errorf("artifacts: reading the upload: %w", err)
		}
		mimeType = http.DetectContentType(head)
	}
	return own, meta, &content{r: br, mimeType: mimeType, hash: sha256.New(), limit: o.maxSize}, nil
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

// InlineImage reports whether a browser shows an image of this MIME type
// without running anything in it: raster images, not SVG.
func InlineImage(mime string) bool {
	return slices.Contains([]string{"image/png", "image/jpeg", "image/gif", "image/webp"}, mime)
}
