// Command vectorlag measures whether a hybrid index's background vectors
// keep up with appends: it has clients append messages of a given length
// to a running hector serve as fast as it answers, for a fixed time,
// reads the server's vector lag (/metrics, hector_index_vector_lag_changes)
// every 100 ms, and reports the lag's maximum, the appends per second, and
// how long after the load stops the lag comes back to 0.
//
//	go build -o /tmp/hector ./cmd/hector
//	/tmp/hector serve --data-dir /tmp/lag &
//	go run ./bench/vectorlag -clients 8 -words 50 -duration 60s
//
// Every request goes to the server given (loopback); it stops by itself.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:8080", "the server's base URL")
	clients := flag.Int("clients", 8, "how many clients append at once, each to its own user")
	words := flag.Int("words", 50, "words in each message")
	duration := flag.Duration("duration", 60*time.Second, "how long the clients append")
	settle := flag.Duration("settle", 60*time.Second, "how long to wait for the lag to come back to 0 afterwards")
	flag.Parse()
	base := strings.TrimRight(*server, "/")
	for i := range *clients {
		post(base+fmt.Sprintf("/v1/apps/lag/users/u%d/sessions", i), map[string]any{"session_id": "s"}, http.StatusCreated, http.StatusConflict)
	}
	lag := func() int64 {
		n, err := vectorLag(base)
		if err != nil {
			log.Fatal(err)
		}
		return n
	}
	var appended atomic.Int64
	var maxLag atomic.Int64
	stop := make(chan struct{})
	var watching sync.WaitGroup
	watching.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if n := lag(); n > maxLag.Load() {
					maxLag.Store(n)
				}
			}
		}
	})
	fmt.Printf("vectorlag: %d clients appending %d-word messages for %s\n", *clients, *words, *duration)
	start := time.Now()
	deadline := start.Add(*duration)
	var appending sync.WaitGroup
	for i := range *clients {
		appending.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 1))
			url := base + fmt.Sprintf("/v1/apps/lag/users/u%d/sessions/s/events", i)
			for time.Now().Before(deadline) {
				post(url, map[string]any{"author": "user", "message": map[string]any{"role": "user",
					"parts": []any{map[string]any{"type": "text", "text": message(r, *words)}}}}, http.StatusCreated)
				appended.Add(1)
			}
		})
	}
	appending.Wait()
	took := time.Since(start)
	stopped := time.Now()
	atLoadEnd := lag()
	for lag() > 0 {
		if time.Since(stopped) > *settle {
			log.Fatalf("the vector lag is still %d %s after the load stopped", lag(), *settle)
		}
		time.Sleep(50 * time.Millisecond)
	}
	caughtUp := time.Since(stopped)
	close(stop)
	watching.Wait()
	fmt.Printf("appended %d messages in %.1f s (%.1f/s); vector lag: at most %d, %d when the load stopped, 0 after %.2f s\n",
		appended.Load(), took.Seconds(), float64(appended.Load())/took.Seconds(), maxLag.Load(), atLoadEnd, caughtUp.Seconds())
}

// vocabulary is what the messages are made of: everyday words, so that
// each message has as many word pieces as a real one of its length.
var vocabulary = strings.Fields(`we finally adopted a puppy from the shelter last weekend and the kids walk him every
evening before dinner my sister is moving to Lisbon in the spring for a new job at the hospital I have been
learning to paint with watercolours since the winter and it helps me relax after work our team shipped the
release on Friday after fixing a bug in the payment service that only showed up under heavy load`)

func message(r *rand.Rand, words int) string {
	w := make([]string, words)
	for i := range w {
		w[i] = vocabulary[r.IntN(len(vocabulary))]
	}
	return strings.Join(w, " ")
}

func post(url string, body any, want ...int) {
	raw, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	for _, w := range want {
		if resp.StatusCode == w {
			return
		}
	}
	log.Fatalf("POST %s: %s: %s", url, resp.Status, msg)
}

// vectorLag reads hector_index_vector_lag_changes from the server's metrics.
func vectorLag(base string) (int64, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "hector_index_vector_lag_changes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("GET /metrics: no hector_index_vector_lag_changes (is the index hybrid?)")
}
