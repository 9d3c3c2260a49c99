// Package retry paces the retries of calls to remote services (model and
// embedding APIs): which answers deserve another try, and how long to wait
// before it.
package retry

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Base is the first backoff; tests shorten it.
var Base = 500 * time.Millisecond

// Retryable reports whether an answer with this status may succeed later:
// too many requests, or a server error.
func Retryable(status int) bool { return status == http.StatusTooManyRequests || status >= 500 }

// After is the wait a Retry-After header of seconds asks for, at most a
// minute; 0 when there is none.
func After(h http.Header) time.Duration {
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s < 0 {
		return 0
	}
	return min(time.Duration(s)*time.Second, time.Minute)
}

// Wait sleeps before the retry that follows attempt (0 for the first
// call): the server's wait when it gave one, else exponential backoff with
// jitter. It returns false, at once, when ctx ends.
func Wait(ctx context.Context, attempt int, server time.Duration) bool {
	wait := server
	if wait == 0 {
		wait = Base<<attempt + time.Duration(rand.Int64N(int64(Base)))
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(wait):
		return true
	}
}
