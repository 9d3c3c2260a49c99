package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/config"
)

// Every SQLite writer (appends, facts, artifacts) shares one write path:
// under a steady stream of appends, fact and artifact writes queue instead
// of failing with "database is locked". 4 appenders, 2 fact writers (store
// and forget) and 1 artifact writer on one SQLite file for 10 s over HTTP:
// no write fails, and what was acknowledged is there afterwards.
func TestSQLiteWritersQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("n/a: -short, and it runs for 10 s")
	}
	s := serverOn(t, "sqlite", t.TempDir()+"/hector.db", func(c *config.Config) {
		c.Server.Artifacts = config.Artifacts{Backend: "sql", Database: "main", MaxSizeMB: 1}
		c.Server.Limits.RequestsPerSecond, c.Server.Limits.Burst = 1e6, 1e6
	})
	srv := httptest.NewServer(s)
	defer srv.Close()
	u := srv.URL + "/v1/apps/load/users/u"

	send := func(method, url, body string) (int, string, error) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw), nil
	}
	for i := range 4 {
		if code, body, err := send("POST", u+"/sessions", fmt.Sprintf(`{"session_id": "s%d"}`, i)); err != nil || code != 201 {
			t.Fatalf("create: %d %s %v", code, body, err)
		}
	}

	var failed atomic.Int64
	var firstFailure sync.Once
	var counts [3]atomic.Int64 // appends, fact writes, artifact versions
	check := func(kind int, what string, code int, body string, err error, want int) {
		if err != nil || code != want {
			failed.Add(1)
			firstFailure.Do(func() { t.Errorf("%s: %d %s %v", what, code, body, err) })
			return
		}
		counts[kind].Add(1)
	}
	deadline := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	// Fact writers spread their facts over users of 100 facts each: a
	// user's facts are bounded in size.
	factUser := func(w, n int) string { return fmt.Sprintf("%s/v1/apps/load/users/f%d-%d", srv.URL, w, n/100) }
	var liveFacts [2][]string // per fact writer, the facts it left stored, as user URL + key
	for i := range 4 {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				code, body, err := send("POST", fmt.Sprintf("%s/sessions/s%d/events", u, i), appendBody(n))
				check(0, "append", code, body, err, 201)
			}
		})
	}
	for w := range 2 {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				key := fmt.Sprintf("w%d/k%d", w, n)
				code, body, err := send("POST", factUser(w, n)+"/facts", fmt.Sprintf(`{"key": %q, "value": "fact %d of writer %d"}`, key, n, w))
				check(1, "store a fact", code, body, err, 201)
				if code != 201 {
					continue
				}
				if n%2 == 1 { // every other one is forgotten again
					code, body, err = send("POST", factUser(w, n)+"/facts:forget", fmt.Sprintf(`{"selector": "key:%s"}`, key))
					check(1, "forget a fact", code, body, err, 200)
					if code == 200 {
						continue
					}
				}
				liveFacts[w] = append(liveFacts[w], factUser(w, n)+" "+key)
			}
		})
	}
	wg.Go(func() {
		for n := 0; time.Now().Before(deadline); n++ {
			code, body, err := send("PUT", u+"/sessions/s0/artifacts/notes.txt", strings.Repeat(fmt.Sprintf("version %d ", n), 1000))
			check(2, "save an artifact", code, body, err, 201)
		}
	})
	wg.Wait()
	t.Logf("in 10 s: %d appends, %d fact writes, %d artifact versions; %d failed", counts[0].Load(), counts[1].Load(), counts[2].Load(), failed.Load())
	if failed.Load() != 0 {
		t.Fatalf("%d writes failed", failed.Load())
	}
	for kind := range counts {
		if counts[kind].Load() == 0 {
			t.Errorf("writer kind %d wrote nothing", kind)
		}
	}

	// What was acknowledged is there.
	var got, want []string
	users := map[string]bool{}
	for _, facts := range liveFacts {
		for _, f := range facts {
			want = append(want, f)
			users[strings.Fields(f)[0]] = true
		}
	}
	for user := range users {
		_, body, _ := send("GET", user+"/facts", "")
		var list struct {
			Facts []struct{ Key string } `json:"facts"`
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		for _, f := range list.Facts {
			got = append(got, user+" "+f.Key)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%d facts stored, want the %d acknowledged and not forgotten", len(got), len(want))
	}
	_, body, _ := send("GET", u+"/sessions/s0/artifacts/notes.txt/versions", "")
	var versions struct {
		Artifacts []struct{ Version int } `json:"artifacts"`
	}
	json.Unmarshal([]byte(body), &versions)
	if int64(len(versions.Artifacts)) != counts[2].Load() {
		t.Errorf("%d artifact versions stored, want the %d acknowledged: %.200s", len(versions.Artifacts), counts[2].Load(), body)
	}
}
