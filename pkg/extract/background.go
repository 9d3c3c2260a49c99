package extract

import (
	"context"
	"sync"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// Extraction in the background, after agents' turns: Notify counts a
// session's turns and returns at once; a worker reads the session's new
// messages once EveryTurns turns have come, or once the session has been
// quiet for IdleAfter, so that a call reads several turns. Where it got to
// is the last successful run's audit event, so a restart goes on from
// there; a failed run is read again by the next.

// Defaults of background extraction.
const (
	DefaultEveryTurns = 4
	DefaultIdleAfter  = 2 * time.Minute
)

type sessionKey struct{ app, user, session string }

type pending struct {
	turns   int
	last    time.Time // the latest turn
	running bool
}

// background is the worker's state.
type background struct {
	mu      sync.Mutex
	pending map[sessionKey]*pending
	wake    chan struct{}
	stop    context.CancelFunc
	done    sync.WaitGroup // the worker and the runs
	runs    sync.WaitGroup // the runs alone
}

// Start runs the background worker until Close.
func (x *Extractor) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	bg := &x.bg
	bg.mu.Lock()
	if bg.stop != nil {
		bg.mu.Unlock()
		cancel()
		return
	}
	bg.pending, bg.wake, bg.stop = map[sessionKey]*pending{}, make(chan struct{}, 1), cancel
	bg.mu.Unlock()
	bg.done.Add(1)
	go func() {
		defer bg.done.Done()
		tick := time.NewTicker(max(x.cfg.IdleAfter/4, 10*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-bg.wake:
			case <-tick.C:
			}
			for _, k := range x.due(x.cfg.Clock()) {
				bg.done.Add(1)
				bg.runs.Add(1)
				go func() {
					defer bg.done.Done()
					defer bg.runs.Done()
					x.runPending(ctx, k)
				}()
			}
		}
	}()
}

// Close stops the worker and waits for the runs under way, which it
// cancels.
func (x *Extractor) Close() {
	bg := &x.bg
	bg.mu.Lock()
	stop := bg.stop
	bg.mu.Unlock()
	if stop != nil {
		stop()
		bg.done.Wait()
	}
}

// Wait waits for the runs under way to end.
func (x *Extractor) Wait() { x.bg.runs.Wait() }

// Notify says a turn ended in a session. It never blocks nor fails: a turn
// does not wait for extraction.
func (x *Extractor) Notify(app, user, sessionID string) {
	bg := &x.bg
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if bg.pending == nil { // not started
		return
	}
	k := sessionKey{app, user, sessionID}
	p := bg.pending[k]
	if p == nil {
		p = &pending{}
		bg.pending[k] = p
	}
	p.turns++
	p.last = x.cfg.Clock()
	if p.turns >= x.cfg.EveryTurns {
		select {
		case bg.wake <- struct{}{}:
		default:
		}
	}
}

// due returns the sessions to read now, marking them running.
func (x *Extractor) due(now time.Time) []sessionKey {
	bg := &x.bg
	bg.mu.Lock()
	defer bg.mu.Unlock()
	var out []sessionKey
	for k, p := range bg.pending {
		if !p.running && p.turns > 0 && (p.turns >= x.cfg.EveryTurns || now.Sub(p.last) >= x.cfg.IdleAfter) {
			p.running, p.turns = true, 0
			out = append(out, k)
		}
	}
	return out
}

// runPending reads a session's messages since the last successful run.
func (x *Extractor) runPending(ctx context.Context, k sessionKey) {
	defer func() {
		bg := &x.bg
		bg.mu.Lock()
		defer bg.mu.Unlock()
		if p := bg.pending[k]; p != nil {
			p.running = false
			if p.turns == 0 {
				delete(bg.pending, k)
			}
		}
	}()
	_, err := x.Extract(ctx, Request{AppName: k.app, UserID: k.user, SessionID: k.session, SinceLastRun: true})
	if err != nil && ctx.Err() == nil {
		x.cfg.Logger.Warn("extract: extracting in the background failed; the next run reads these turns again",
			"app", k.app, "session", k.session, "error", err)
	}
}

// lastExtracted is the sequence number the session's last successful
// extraction read up to (0 for none), from its audit event.
func lastExtracted(s session.Session) int64 {
	evs := s.Events()
	for i := evs.Len() - 1; i >= 0; i-- {
		ev := evs.At(i)
		if ev.Author != AuditAuthor {
			continue
		}
		record, _ := ev.Metadata["audit"].(map[string]any)
		if record["operation"] == "extract" && record["outcome"] == "ok" {
			switch n := record["to_seq"].(type) { // as stored, or as JSON read it back
			case int64:
				return n
			case float64:
				return int64(n)
			}
		}
	}
	return 0
}
