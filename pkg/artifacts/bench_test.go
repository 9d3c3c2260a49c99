package artifacts_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// Run with: go test -run '^$' -bench . ./pkg/artifacts (MB/s is the throughput).

var benchStores = []struct {
	name string
	open func(b *testing.B) artifacts.Service
}{
	{"inmemory", func(b *testing.B) artifacts.Service { return artifacts.NewInMemoryService() }},
	{"sqlite", func(b *testing.B) artifacts.Service { return must(artifacts.NewSQL(sqldbtest.SQLite(b))) }},
	{"postgres", func(b *testing.B) artifacts.Service { return must(artifacts.NewSQL(sqldbtest.Postgres(b))) }},
	{"filesystem", func(b *testing.B) artifacts.Service { return must(artifacts.NewFilesystem(b.TempDir())) }},
}

func must(s artifacts.Service, err error) artifacts.Service {
	if err != nil {
		panic(err)
	}
	return s
}

var benchSizes = []int{1 << 10, 8 << 20}

func benchContent(size, salt int) []byte {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte((i + salt) * 31)
	}
	return data
}

func BenchmarkSave(b *testing.B) {
	for _, st := range benchStores {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dKiB", st.name, size>>10), func(b *testing.B) {
				s := st.open(b)
				data := benchContent(size, 0)
				b.SetBytes(int64(size))
				i := 0
				for b.Loop() {
					i++
					data[0] = byte(i) // distinct content, so deduplication does not flatter the filesystem store
					data[1] = byte(i >> 8)
					_, err := s.Save(context.Background(), &artifacts.SaveRequest{
						Ref: artifacts.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: "a.bin"}, MimeType: "application/octet-stream", Body: bytes.NewReader(data)})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	for _, st := range benchStores {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dKiB", st.name, size>>10), func(b *testing.B) {
				s := st.open(b)
				ref := artifacts.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: "a.bin"}
				if _, err := s.Save(context.Background(), &artifacts.SaveRequest{Ref: ref, Body: bytes.NewReader(benchContent(size, 1))}); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				for b.Loop() {
					_, body, err := s.Open(context.Background(), ref, 0)
					if err != nil {
						b.Fatal(err)
					}
					if n, err := io.Copy(io.Discard, body); err != nil || n != int64(size) {
						b.Fatalf("read %d bytes (%v), want %d", n, err, size)
					}
					body.Close()
				}
			})
		}
	}
}
