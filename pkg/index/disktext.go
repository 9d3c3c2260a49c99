package index

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// A document's text is the largest part of its row (a LongMemEval turn
// averages 1 KB), and a copy of what the sessions keep: the file keeps it
// compressed with zstd, which halves a turn (1,020 → 537 bytes on average;
// deflate gives 503 but reads three times slower, and a search reads every
// result's text), where that saves at least an eighth. A short text, and
// every text a file written before kept, stays a TEXT value; a compressed
// one is a BLOB, so the two never meet.

// packText is text as the file keeps it: a string, or compressed bytes.
func packText(text string) any {
	if len(text) < 64 {
		return text
	}
	packed := compressor.EncodeAll([]byte(text), nil)
	if len(packed) > len(text)-len(text)/8 {
		return text
	}
	return packed
}

// maxStoredText bounds what a compressed text may grow to: a damaged file
// must not fill the memory.
const maxStoredText = 64 << 20

// Both are safe for concurrent use, and never fail to be made with these
// options.
var (
	compressor, _   = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<17))
	decompressor, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxStoredText), zstd.WithDecoderConcurrency(0))
)

// storedText reads a document's text from the file, compressed or not.
type storedText struct{ s *string }

func (t storedText) Scan(src any) error {
	switch v := src.(type) {
	case string:
		*t.s = v
	case nil:
		*t.s = ""
	case []byte:
		text, err := decompressor.DecodeAll(v, nil)
		if err == nil && len(v) == 0 {
			err = fmt.Errorf("empty") // packText never writes one
		}
		if err != nil {
			return fmt.Errorf("a document's text is damaged: %w", err)
		}
		*t.s = string(text)
	default:
		return fmt.Errorf("a document's text is a %T", src)
	}
	return nil
}
