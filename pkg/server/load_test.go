package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// BenchmarkLoad drives a real HTTP server on loopback: appends with 1, 2,
// 8, 32 and 128 concurrent clients (the throughput curve), and searches
// with 8 in users of 250 events each, reporting req/s with p50 and p99
// latency.
//
//	HECTOR_TEST_POSTGRES_DSN=… go test -run '^$' -bench Load -benchtime 5s ./pkg/server
//
// HECTOR_BENCH_INDEX sets the index (YAML, default {type: keyword}), such
// as "{type: hybrid, embedder: builtin}".
func BenchmarkLoad(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			cfg := loadConfig(b, backend)
			svcs, err := app.Open(b.Context(), cfg, quiet)
			if err != nil {
				b.Fatal(err)
			}
			defer svcs.Close()
			s, err := New(svcs, cfg, quiet)
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(s)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			for i := range 128 {
				post(b, client, fmt.Sprintf("%s/v1/apps/load/users/u%d/sessions", srv.URL, i), fmt.Sprintf(`{"session_id": "s%d"}`, i))
			}
			// Searches run on memories of their own, of a fixed size: the
			// appends above add as many events as their speed allows.
			for i := range 8 {
				post(b, client, fmt.Sprintf("%s/v1/apps/search/users/u%d/sessions", srv.URL, i), `{"session_id": "s"}`)
				for n := range 250 {
					post(b, client, fmt.Sprintf("%s/v1/apps/search/users/u%d/sessions/s/events", srv.URL, i), appendBody(n))
				}
			}
			for _, clients := range []int{1, 2, 8, 32, 128} {
				b.Run(fmt.Sprintf("append/clients=%d", clients), func(b *testing.B) {
					runLoad(b, clients, func(i, n int) (string, string) {
						return fmt.Sprintf("%s/v1/apps/load/users/u%d/sessions/s%d/events", srv.URL, i, i), appendBody(n)
					}, client)
				})
			}
			// Searches are measured once every event has its vector: an
			// index that embeds in the background would be embedding
			// meanwhile, on the cores the searches use.
			if idx, ok := svcs.Index.(*index.Index); ok {
				if err := idx.AwaitVectors(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("search/clients=8", func(b *testing.B) {
				runLoad(b, 8, func(i, n int) (string, string) {
					return fmt.Sprintf("%s/v1/apps/search/users/u%d/memory:search", srv.URL, i), fmt.Sprintf(`{"query": "deploying service %d", "limit": 5}`, n%97)
				}, client)
			})
		})
	}
}

func appendBody(n int) string {
	return fmt.Sprintf(`{"author":"user","message":{"role":"user","parts":[{"type":"text","text":"message %d about deploying service %d to cluster kappa"}]}}`, n, n%97)
}

func loadConfig(b *testing.B, backend string) *config.Config {
	dir := b.TempDir()
	index := os.Getenv("HECTOR_BENCH_INDEX")
	if index == "" {
		index = "{type: keyword}"
	}
	index = strings.TrimSuffix(index, "}") + ", persist: false}"
	yaml := fmt.Sprintf("server:\n  data_dir: %s\n  index: %s\n  limits: {requests_per_second: 1000000, burst: 1000000}\n", dir, index)
	if backend == "postgres" {
		sqldbtest.Postgres(b) // skips without a server
		schema := fmt.Sprintf("load_%d", time.Now().UnixNano())
		db := sqldbtest.Postgres(b)
		db.Exec("CREATE SCHEMA " + schema)
		b.Cleanup(func() { db.Exec("DROP SCHEMA " + schema + " CASCADE") })
		yaml += fmt.Sprintf("  sessions: {backend: sql, database: pg}\ndatabases:\n  pg: {driver: postgres, dsn: \"%s search_path=%s\"}\n", os.Getenv(sqldbtest.PostgresEnv), schema)
	}
	cfg, err := config.Parse("load.yaml", []byte(yaml), config.Overrides{})
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

func post(b *testing.B, c *http.Client, url, body string) {
	resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		b.Fatalf("POST %s: %s", url, resp.Status)
	}
}

// runLoad sends b.N requests from `clients` goroutines, each client to its own user.
func runLoad(b *testing.B, clients int, request func(client, n int) (url, body string), c *http.Client) {
	var next atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for {
				n := int(next.Add(1))
				if n > b.N {
					break
				}
				url, body := request(i, n)
				t0 := time.Now()
				post(b, c, url, body)
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-µs")
}
