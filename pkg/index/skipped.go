package index

import (
	"slices"
	"sync"
	"time"
)

// SkippedDocument is an event whose document the store refused. The
// follower went on without it, so one document cannot hold back every
// later change of every user; a rebuild tries it again.
type SkippedDocument struct {
	AppName   string    `json:"app_name"`
	UserID    string    `json:"user_id"`
	SessionID string    `json:"session_id"`
	EventID   string    `json:"event_id"`
	Error     string    `json:"error"`
	At        time.Time `json:"at"`
}

// Skips reports the documents skipped since the process started (Total)
// and the latest of them still to be retried by a rebuild (Recent, at most
// maxRecentSkips).
type Skips struct {
	Total  int64             `json:"total"`
	Recent []SkippedDocument `json:"recent,omitempty"`
}

const maxRecentSkips = 100

// skipLog remembers refused documents for reports and for the metric.
type skipLog struct {
	mu     sync.Mutex
	total  int64
	recent []SkippedDocument
}

func (l *skipLog) add(d SkippedDocument) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total++
	if len(l.recent) == maxRecentSkips {
		l.recent = slices.Delete(l.recent, 0, 1)
	}
	l.recent = append(l.recent, d)
}

// forget drops the skips made before a rebuild that has since retried
// them: all of them (appName ""), one app's or one user's.
func (l *skipLog) forget(appName, userID string, before time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recent = slices.DeleteFunc(l.recent, func(d SkippedDocument) bool {
		return d.At.Before(before) && (appName == "" || d.AppName == appName && (userID == "" || d.UserID == userID))
	})
}

func (l *skipLog) report() Skips {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Skips{Total: l.total, Recent: slices.Clone(l.recent)}
}
