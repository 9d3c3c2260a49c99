package server

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// failureLog logs failed requests, each kind (route and error code) at
// most once every failureEvery, with how many it left out since: a full
// disk or a store that is down fails every request alike, and thousands
// of identical lines hide the one that says why. A 503 (the request may
// be retried) is a warning, anything else an error.
type failureLog struct {
	mu   sync.Mutex
	seen map[string]*failureSeen
}

type failureSeen struct {
	at      time.Time
	omitted int
}

const failureEvery = 10 * time.Second

func (f *failureLog) log(logger *slog.Logger, route string, e *apiError, err error) {
	key := route + " " + e.code
	f.mu.Lock()
	if f.seen == nil {
		f.seen = map[string]*failureSeen{}
	}
	s := f.seen[key]
	if s != nil && time.Since(s.at) < failureEvery {
		s.omitted++
		f.mu.Unlock()
		return
	}
	omitted := 0
	if s != nil {
		omitted = s.omitted
	}
	f.seen[key] = &failureSeen{at: time.Now()}
	f.mu.Unlock()
	level := slog.LevelError
	if e.status == 503 {
		level = slog.LevelWarn
	}
	args := []any{"route", route, "status", e.status, "error", err}
	if omitted > 0 {
		args = append(args, "like_it_since_last_logged", omitted)
	}
	logger.Log(context.Background(), level, "request failed", args...)
}
