package eval

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

// Limits bound what loading a data set may take, so that a file that is
// not what it claims (a gzip bomb, /dev/zero, one endless line) fails with
// an error naming the file and the limit instead of taking the machine's
// memory: reading holds at most MaxBytes of data, and a loader a few
// times that.
type Limits struct {
	MaxBytes   int64 // the data, decompressed (a zip's files together)
	MaxLine    int   // one line of JSON lines
	MaxRecords int   // lines of JSON lines, questions or conversations
}

// DefaultLimits hold the public benchmarks whole with room to spare:
// longmemeval_s is 265 MiB and its longest question 3 MiB, LoCoMo 3 MiB.
var DefaultLimits = Limits{MaxBytes: 512 << 20, MaxLine: 64 << 20, MaxRecords: 1_000_000}

// The flags that raise each limit, for the errors that name them.
const (
	maxBytesFlag   = "--max-data-mb"
	maxLineFlag    = "--max-line-mb"
	maxRecordsFlag = "--max-records"
)

// ReadFile reads the file at path whole, gunzipped if it is gzip, and
// refuses it past l.MaxBytes.
func (l Limits) ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var in io.Reader = r
	if magic, _ := r.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		in = zr
	}
	return l.readAll(path, in)
}

// readAll reads r, whose data counts against l.MaxBytes. It reads in
// chunks, so that data past the limit is refused having held no more
// than the limit (io.ReadAll's doubling would hold up to twice as much).
func (l Limits) readAll(name string, r io.Reader) ([]byte, error) {
	var chunks [][]byte
	total := int64(0)
	for {
		chunk := make([]byte, min(1<<20, l.MaxBytes+1-total))
		n, err := io.ReadFull(r, chunk)
		chunks, total = append(chunks, chunk[:n]), total+int64(n)
		if total > l.MaxBytes {
			return nil, fmt.Errorf("%s holds more than %s of data once decompressed, the limit: raise it with %s if the file is what you meant",
				name, size(l.MaxBytes), maxBytesFlag)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return bytes.Join(chunks, nil), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
}

// lines calls fn with each line of raw that is not blank, numbered from
// 1, within l.MaxLine and l.MaxRecords.
func (l Limits) lines(name string, raw []byte, fn func(n int, line []byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, l.MaxLine)
	n, records := 0, 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := l.count(name, &records); err != nil {
			return err
		}
		if err := fn(n, sc.Bytes()); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("%s, line %d: longer than %s, the limit: raise it with %s if the file is what you meant",
			name, n+1, size(int64(l.MaxLine)), maxLineFlag)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// count counts one more record, refusing one past l.MaxRecords.
func (l Limits) count(name string, records *int) error {
	if *records++; *records > l.MaxRecords {
		return l.tooMany(name)
	}
	return nil
}

func (l Limits) tooMany(name string) error {
	return fmt.Errorf("%s holds more than %d records (lines, questions or conversations), the limit: raise it with %s if the file is what you meant",
		name, l.MaxRecords, maxRecordsFlag)
}

func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
