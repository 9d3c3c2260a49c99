package index

import (
	"context"
	"fmt"

	"github.com/hectormem/hector/pkg/errkind"
	"github.com/hectormem/hector/pkg/session"
)

// ErrHealing: the index in process found its file not to be believed
// (a page damaged, made from another store's sessions, older than an
// erasure) and is building it again from the sessions. Searches say so
// until it has caught up, rather than answer from part of it.
var ErrHealing = errkind.New(errkind.Unavailable, "the index is being built again from the sessions")

// healing is why the index's file is being built again.
type healing struct{ why string }

// boundStore is an in-process store whose file says which sessions it was
// derived from (session.Lineage), and can be set aside for an empty one.
type boundStore interface {
	lineage(ctx context.Context) (session.Lineage, error)
	bind(ctx context.Context, lin session.Lineage) error
	reset(ctx context.Context, suffix string) error
}

// lineageOf is sessions' lineage, when it names one.
func lineageOf(ctx context.Context, sessions session.Service) (lin session.Lineage, known bool, err error) {
	l, ok := sessions.(session.LineageReader)
	if !ok {
		return lin, false, nil
	}
	if lin, err = l.Lineage(ctx); err != nil {
		return lin, false, fmt.Errorf("index: reading the sessions' lineage: %w", err)
	}
	return lin, lin.StoreID != "", nil
}

// checkFile, as the index starts, sets aside a file that was not derived
// from these sessions as they are, for an empty one the catch-up fills
// from the change feed, and binds the file to them.
func (x *Index) checkFile(ctx context.Context) error {
	b, ok := x.local.(boundStore)
	if !ok || x.opts.sessions == nil {
		return nil
	}
	lin, known, err := lineageOf(ctx, x.opts.sessions)
	if err != nil || !known {
		return err
	}
	why, err := x.disowned(ctx, b, lin)
	if err != nil {
		return err
	}
	if why != "" {
		x.logger().Warn("index: the index file was not derived from these sessions as they are; it is set aside (.stale) and built again from them, and searches answer 503 until it is",
			"why", why)
		if err := x.resetFile(ctx, b, ".stale", why); err != nil {
			return err
		}
	}
	return b.bind(ctx, lin)
}

// disowned says why the file must not be believed over the sessions, ""
// when it may: made from another store; before an erasure whose
// tombstones the feed no longer holds, so that catching up cannot remove
// the person; or past the feed's head (the sessions are older than it).
// A file that names no store (new, or written before files named one) is
// judged by its cursor alone.
func (x *Index) disowned(ctx context.Context, b boundStore, lin session.Lineage) (string, error) {
	got, err := b.lineage(ctx)
	if err != nil {
		return "", err
	}
	cursor, err := x.position.Cursor(ctx)
	if err != nil {
		return "", err
	}
	switch {
	case got.StoreID != "" && got.StoreID != lin.StoreID:
		return "it was made from another store's sessions", nil
	case got.StoreID != "" && got.Erasures < lin.Erasures:
		return fmt.Sprintf("it was made before the last %d erasure(s), which the change feed no longer records", lin.Erasures-got.Erasures), nil
	case got.Erasures > lin.Erasures:
		return "it records erasures the sessions do not: the sessions are older than it", nil
	case cursor > lin.Head:
		return fmt.Sprintf("it has applied the change feed up to %d, past its head %d: the sessions are older than it", cursor, lin.Head), nil
	}
	return "", nil
}

// bindFile records that the file holds what these sessions hold now: after
// an erasure has removed the person from it, and after a full rebuild.
func (x *Index) bindFile(ctx context.Context, sessions session.Service, lin session.Lineage) error {
	if b, ok := x.local.(boundStore); ok && sessions != nil && lin.StoreID != "" {
		return b.bind(ctx, lin)
	}
	return nil
}

// resetFile sets the file aside and starts an empty one, which the
// follower fills from the change feed; searches answer ErrHealing until
// it has caught up.
func (x *Index) resetFile(ctx context.Context, b boundStore, suffix, why string) error {
	x.healing.Store(&healing{why: why})
	if err := b.reset(ctx, suffix); err != nil {
		return err
	}
	x.floor.Store(0)
	if x.lane != nil {
		x.lane.behind.Store(true)
		x.lane.publish(0)
	}
	return nil
}

// heal builds the file again once a damaged page was read from it: on a
// goroutine of its own (the reader that found it must not wait, and the
// flusher that may have found it is stopped by the reset), once.
func (x *Index) heal(err error) {
	const why = "a page of its file was found damaged"
	x.resetting.Add(1)
	if !x.healing.CompareAndSwap(nil, &healing{why: why}) {
		x.resetting.Add(-1)
		return
	}
	x.logger().Error("index: a page of the index file is damaged; it is set aside (.damaged) and built again from the sessions, and searches answer 503 until it is",
		"error", err)
	b := x.local.(boundStore)
	x.background.Go(func() {
		defer x.resetting.Add(-1) // once the catch-up is under way
		ctx := x.life
		lin, _, err := lineageOf(ctx, x.opts.sessions)
		if err == nil {
			err = x.resetFile(ctx, b, ".damaged", why)
		}
		if err == nil {
			err = x.bindFile(ctx, x.opts.sessions, lin)
		}
		if err != nil {
			x.logger().Error("index: building the damaged index file again failed; the next start sets it aside", "error", err)
			return
		}
		x.catchUpInBackground()
	})
}

// Healing says why the index's file is being built again, and how far
// along it is, nil when it is not.
func (x *Index) Healing(ctx context.Context) error {
	h := x.healing.Load()
	if h == nil {
		return nil
	}
	cursor, err := x.position.Cursor(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrHealing, h.why)
	}
	resp, err := x.opts.sessions.Changes(ctx, &session.ChangesRequest{After: cursor, Limit: 1})
	if err != nil {
		return fmt.Errorf("%w: %s", ErrHealing, h.why)
	}
	if cursor >= resp.Head && !x.catchingUp.Load() && x.resetting.Load() == 0 {
		if x.healing.CompareAndSwap(h, nil) {
			x.logger().Info("index: the index file is built again from the sessions; searches answer from it")
		}
		return nil
	}
	return fmt.Errorf("%w: %s; it has applied the change feed up to %d of %d: search again shortly", ErrHealing, h.why, cursor, resp.Head)
}
