package retry

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestRetryable(t *testing.T) {
	for status, want := range map[int]bool{200: false, 400: false, 401: false, 429: true, 500: true, 503: true} {
		if Retryable(status) != want {
			t.Errorf("Retryable(%d) = %v", status, !want)
		}
	}
}

func TestAfter(t *testing.T) {
	for header, want := range map[string]time.Duration{"": 0, "3": 3 * time.Second, "-1": 0, "soon": 0, "3600": time.Minute} {
		h := http.Header{}
		if header != "" {
			h.Set("Retry-After", header)
		}
		if got := After(h); got != want {
			t.Errorf("After(Retry-After: %q) = %v, want %v", header, got, want)
		}
	}
}

func TestWaitStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Wait(ctx, 0, time.Hour) {
		t.Error("Wait went on after its context ended")
	}
	if !Wait(context.Background(), 0, time.Nanosecond) {
		t.Error("Wait gave up on a live context")
	}
}
