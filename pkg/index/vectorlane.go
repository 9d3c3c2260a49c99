package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// DefaultVectorLag is how many changes background vectors may lag behind
// the keyword terms before an append waits for them: a burst of appends is
// taken at keyword speed, a sustained rate above the embedder's is not.
const DefaultVectorLag = 100_000

// vectorLane embeds a hybrid index's documents in the background (see
// WithBackgroundVectors). It follows the change feed behind the keyword
// terms, with a cursor of its own, and writes each document again with its
// vector. It runs in the process that leads the feed, and only writes a
// document the store still holds: one deleted meanwhile stays deleted.
type vectorLane struct {
	position Position
	limit    int64
	// rate is how many changes a second the lane embeds, a moving average
	// over its batches (float64 bits; 0 until the first batch).
	rate     atomic.Uint64
	wake     chan struct{} // the terms moved on
	appended atomic.Int64  // when this process last indexed an append (Unix nanoseconds)
	// behind is set while the lane works through a lag no append made: it
	// started behind the feed (an upgrade to another embedder, say, builds
	// every vector again) or a rebuild sent it back to the start. Appends
	// do not wait for that, however long it takes; the lane clears it once
	// it comes within its bound of the feed's head.
	behind   atomic.Bool
	yielding time.Time // since when the lane has been giving way to appends; the lane's own

	mu      sync.Mutex
	done    int64         // vectors are written up to this change, as last seen
	changed chan struct{} // closed when done moves

	stop    context.CancelFunc
	stopped chan struct{}
}

func newVectorLane(position Position, limit int64) *vectorLane {
	return &vectorLane{position: position, limit: limit, wake: make(chan struct{}, 1), changed: make(chan struct{})}
}

// laneBatch is how many changes the lane embeds at a time: its cursor, and
// so what a restart embeds again, moves on after each batch.
const laneBatch = 32

// While appends keep coming, one within laneQuiet of the last, the lane
// gives them the processor, for at most laneYield at a time (then it embeds
// a batch) and only while vectors lag less than half the limit behind: a
// burst of appends goes at keyword speed, and a document waits at most
// about laneYield for its vector unless the embedder cannot keep up.
const (
	laneQuiet = 50 * time.Millisecond
	laneYield = 5 * time.Second
)

// laneIdle is how often an idle lane looks at the feed: another replica's
// appends reach it through the follower, without waking it.
const laneIdle = 2 * time.Second

// catchUpWithin bounds how long the lane needs to embed what lags behind:
// an append waits once vectors lag more than this much of the lane's own
// embedding time (and never more than the limit), so that when appends
// stop, every document has its vector within about this long. A burst
// shorter than that still goes at keyword speed.
const catchUpWithin = 4 * time.Second

// bound is how many changes vectors may lag behind now: what the lane
// embeds in catchUpWithin at its measured rate, at least a batch, at most
// the limit.
func (l *vectorLane) bound() int64 {
	rate := math.Float64frombits(l.rate.Load())
	if rate == 0 {
		return l.limit
	}
	return min(l.limit, max(2*laneBatch, int64(rate*catchUpWithin.Seconds())))
}

// eta is how long the lane needs to embed changes at its measured rate
// (0 before it has measured it).
func (l *vectorLane) eta(changes int64) time.Duration {
	rate := math.Float64frombits(l.rate.Load())
	if rate == 0 {
		return 0
	}
	return time.Duration(float64(changes) / rate * float64(time.Second)).Round(time.Second)
}

// measured folds a batch of n changes embedded in took into the rate.
func (l *vectorLane) measured(n int64, took time.Duration) {
	if n <= 0 || took <= 0 {
		return
	}
	now := float64(n) / took.Seconds()
	if old := math.Float64frombits(l.rate.Load()); old > 0 {
		now = 0.8*old + 0.2*now
	}
	l.rate.Store(math.Float64bits(now))
}

// poke tells the lane the terms moved on.
func (l *vectorLane) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *vectorLane) publish(done int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if done != l.done {
		l.done = done
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// admit lets through an append of the change at cursor once vectors lag
// no more than the bound behind it, or at once while the lane is behind.
func (l *vectorLane) admit(ctx context.Context, cursor int64) error {
	l.appended.Store(time.Now().UnixNano())
	if l.behind.Load() {
		return nil
	}
	return l.await(ctx, cursor-l.bound())
}

// await waits until vectors are written up to cursor, if the lane runs.
func (l *vectorLane) await(ctx context.Context, cursor int64) error {
	if l.stop == nil {
		return nil
	}
	for {
		l.mu.Lock()
		done, changed := l.done, l.changed
		l.mu.Unlock()
		if done >= cursor {
			return nil
		}
		l.poke()
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("index: waiting for vectors to catch up (they lag more than %d changes behind): %w", l.bound(), ctx.Err())
		}
	}
}

// startLane runs the lane until Close.
func (x *Index) startLane(ctx context.Context) {
	l := x.lane
	if done, err := l.position.Cursor(ctx); err != nil {
		l.behind.Store(true)
	} else if resp, err := x.opts.sessions.Changes(ctx, &session.ChangesRequest{After: done, Limit: 1}); err != nil || resp.Head > done {
		l.behind.Store(true)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.stop, l.stopped = cancel, make(chan struct{})
	go func() {
		defer close(l.stopped)
		t := time.NewTicker(laneIdle)
		defer t.Stop()
		logged := time.Now()
		for {
			if wait := l.yield(x.floor.Load()); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				continue
			}
			more, err := x.embedBehind(ctx)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				x.logger().Warn("index: embedding in the background failed; trying again", "error", err)
			case more:
				if time.Since(logged) > progressEvery {
					terms, _ := x.position.Cursor(ctx)
					behind := terms - l.cursor()
					x.logger().Info("index: embedding in the background", "vectors_at", l.cursor(), "changes_behind", behind, "eta", l.eta(behind))
					logged = time.Now()
				}
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-l.wake:
			case <-t.C:
			}
		}
	}()
}

// yield says how long the lane waits before its next batch, with the terms
// written up to terms.
func (l *vectorLane) yield(terms int64) time.Duration {
	now := time.Now()
	quiet := time.Unix(0, l.appended.Load()).Add(laneQuiet)
	// Until the lane has measured its rate it does not give way: what it
	// may let pile up depends on it.
	if !now.Before(quiet) || l.rate.Load() == 0 || terms-l.cursor() >= l.bound()/2 {
		l.yielding = time.Time{}
		return 0
	}
	if l.yielding.IsZero() {
		l.yielding = now
	}
	if now.Sub(l.yielding) >= laneYield {
		l.yielding = time.Time{}
		return 0
	}
	return quiet.Sub(now)
}

func (l *vectorLane) cursor() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

func (l *vectorLane) close() {
	if l.stop != nil {
		l.stop()
		<-l.stopped
	}
}

// embedBehind embeds one batch of the documents whose terms are written and
// whose vectors are not, and reports whether there are more.
func (x *Index) embedBehind(ctx context.Context) (bool, error) {
	l := x.lane
	if !x.leads.Load() { // another replica embeds: nothing to read here
		return false, nil
	}
	from, err := l.position.Cursor(ctx)
	if err != nil {
		return false, err
	}
	l.publish(from)
	terms, err := x.position.Cursor(ctx)
	if err != nil || from >= terms {
		return false, err
	}
	resp, err := x.opts.sessions.Changes(ctx, &session.ChangesRequest{After: from, Limit: laneBatch})
	if err != nil {
		return false, fmt.Errorf("index: reading the change feed: %w", err)
	}
	// Up to the terms, or to the end of a full page short of them.
	upTo, changes := terms, resp.Changes
	for i, ch := range changes {
		if ch.Cursor > terms {
			changes = changes[:i]
			break
		}
	}
	if len(changes) == laneBatch && resp.Cursor < terms {
		upTo = resp.Cursor
	}
	started := time.Now()
	var batch vectorBatch
	// Deletions are the keyword follower's, which has applied them: the
	// lane stays behind it.
	if err := applyChanges(ctx, x.opts.include, changes, &batch); err != nil {
		return false, err
	}
	if err := x.writeVectors(ctx, batch); err != nil {
		return false, err
	}
	moved, err := l.position.Advance(ctx, from, upTo)
	if err != nil || !moved { // a rebuild rewound it meanwhile: go on from there
		return !moved, err
	}
	l.measured(upTo-from, time.Since(started))
	l.publish(upTo)
	if resp.Head-upTo <= l.bound() {
		l.behind.Store(false)
	}
	return upTo < terms, nil
}

// vectorBatch collects the documents a page of changes holds, per session.
type vectorBatch []sessionDocs

type sessionDocs struct {
	owner     Owner
	sessionID string
	docs      []Document
}

func (b *vectorBatch) addSession(_ context.Context, o Owner, sessionID string, docs []Document) error {
	if len(docs) > 0 {
		*b = append(*b, sessionDocs{o, sessionID, docs})
	}
	return nil
}

func (b *vectorBatch) clearSession(context.Context, Owner, string) error { return nil }

// writeVectors embeds the batch at once, then writes each document the
// store still holds again, with its terms and its vector (a hybrid index's:
// prepare keeps each of them, with or without a vector). The writes hold
// the follower's lock, so a deletion the follower applies is never undone.
func (x *Index) writeVectors(ctx context.Context, batch vectorBatch) error {
	var all []Document
	var owners []Owner
	for _, s := range batch {
		all = append(all, s.docs...)
		for range s.docs {
			owners = append(owners, s.owner)
		}
	}
	stored, err := x.prepare(ctx, all, source{owner: func(i int) Owner { return owners[i] }}, true,
		func(i int, err error) { x.refusedOf(owners[i], all)(i, err) })
	if err != nil {
		return err
	}
	x.followMu.Lock()
	defer x.followMu.Unlock()
	for _, s := range batch {
		docs := stored[:len(s.docs)]
		stored = stored[len(s.docs):]
		present, err := inStore(ctx, x, s.owner, s.sessionID, docs, true)
		if err != nil {
			return err
		}
		if err := x.writeStoredSkipping(ctx, x.store, s.owner, present); err != nil {
			return err
		}
	}
	return nil
}

// AwaitVectors waits until every document written so far has its vector:
// at once when vectors are not embedded in the background.
func (x *Index) AwaitVectors(ctx context.Context) error {
	if x.lane == nil {
		return nil
	}
	terms, err := x.position.Cursor(ctx)
	if err != nil {
		return err
	}
	if !x.leads.Load() {
		return errors.New("index: another replica embeds in the background")
	}
	return x.lane.await(ctx, terms)
}

// VectorCursor is how far along the change feed vectors are written, and
// whether they are embedded in the background (when not, they are written
// with the terms, and the cursor is the index's own).
func (x *Index) VectorCursor(ctx context.Context) (int64, bool, error) {
	if x.lane == nil {
		c, err := x.position.Cursor(ctx)
		return c, false, err
	}
	c, err := x.lane.position.Cursor(ctx)
	return c, true, err
}
