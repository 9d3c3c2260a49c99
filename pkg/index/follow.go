package index

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/telemetry"
)

// CatchUp applies the change feed from the index's cursor to its head, if
// this process leads the feed. Another replica applies only the session
// deletions past the cursor (as far as one page of the feed), so that a
// session deleted through it is gone from the shared store at once; the
// leader applies the rest.
func (x *Index) CatchUp(ctx context.Context, sessions session.Service) (err error) {
	if sessions == nil {
		return fmt.Errorf("%w: CatchUp needs the session service to read from", ErrInvalidArgument)
	}
	ctx, span := telemetry.Span(ctx, "index.catch_up", attribute.String("hector.index.store", x.store.Name()))
	defer func() { telemetry.End(span, err) }()
	if err := x.usable(ctx); err != nil {
		return err
	}
	if x.catchingUp.Load() { // the catch-up applies it all, in order; a caller must not wait for it
		return nil
	}
	lead, err := x.position.Lead(ctx)
	if err != nil {
		return err
	}
	x.leads.Store(lead)
	if lead {
		return x.follow(ctx, sessions, nil)
	}
	cursor, err := x.position.Cursor(ctx)
	if err != nil {
		return err
	}
	x.floor.Store(cursor)
	resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: cursor})
	if err != nil {
		return fmt.Errorf("index: reading the change feed: %w", err)
	}
	deletions := slices.DeleteFunc(resp.Changes, func(ch session.Change) bool { return ch.Kind != session.ChangeSessionDeleted })
	return applyChanges(ctx, x.opts.include, deletions, &storeTarget{x: x, w: x.store})
}

// inlineCatchUp is how far behind the feed a starting index may be and
// still catch up before Start returns; further behind (an upgrade that
// builds the index anew, a restore), it catches up in the background, so
// that a server starts in the same time whatever its sessions hold.
const inlineCatchUp = 2000

// catchUpAtStart applies what the change feed recorded while the index was
// down. Far behind, it goes on in the background and Start returns: the
// index answers from what it has applied so far, CatchingUp says so, and
// appends leave their indexing to it (see Index) instead of waiting.
func (x *Index) catchUpAtStart(ctx context.Context) error {
	cursor, err := x.position.Cursor(ctx)
	if err != nil {
		return err
	}
	resp, err := x.opts.sessions.Changes(ctx, &session.ChangesRequest{After: cursor, Limit: 1})
	if err != nil {
		return fmt.Errorf("index: reading the change feed: %w", err)
	}
	if resp.Head-cursor <= inlineCatchUp {
		return x.follow(ctx, x.opts.sessions, nil)
	}
	x.logger().Info("index: far behind the change feed; catching up in the background, searches answer from what is applied",
		"cursor", cursor, "head", resp.Head)
	x.catchUpInBackground()
	return nil
}

// catchUpInBackground follows the change feed to its head on a goroutine
// of its own; appends leave their indexing to it meanwhile (see Index).
// One that runs already goes on from a rewound cursor by itself.
func (x *Index) catchUpInBackground() {
	if !x.catchingUp.CompareAndSwap(false, true) {
		return
	}
	x.background.Go(func() {
		defer x.catchingUp.Store(false)
		if err := x.follow(x.life, x.opts.sessions, nil); err != nil && x.life.Err() == nil {
			x.logger().Warn("index: the catch-up stopped; the server's periodic catch-up goes on from there", "error", err)
			return
		}
		x.logger().Info("index: caught up with the change feed")
	})
}

// CatchingUp reports whether the index is catching up with the change feed
// in the background, since it started far behind.
func (x *Index) CatchingUp() bool { return x.catchingUp.Load() }

// follow applies the change feed from the index's cursor: to its head, or,
// given the handle of a session just appended to, until the cursor reaches
// its newest event. Only the process that leads the feed follows it. A
// catch-up that takes a while logs how far along it is.
func (x *Index) follow(ctx context.Context, sessions session.Service, handle session.Session) error {
	x.followMu.Lock()
	defer x.followMu.Unlock()
	if x.lane != nil {
		defer x.lane.poke()
	}
	cursor, err := x.position.Cursor(ctx)
	if err != nil {
		return err
	}
	target := &storeTarget{x: x, w: x.store, skipIndexed: true, termsOnly: x.lane != nil}
	var upTo int64
	if handle != nil {
		var done bool
		if upTo, done, err = x.applyHandle(ctx, handle, cursor, target); done || err != nil {
			return err
		}
	}
	logged := time.Now()
	for {
		x.floor.Store(cursor)
		if upTo > 0 && cursor >= upTo {
			return nil
		}
		resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: cursor})
		if err != nil {
			return fmt.Errorf("index: reading the change feed: %w", err)
		}
		if len(resp.Changes) == 0 {
			return nil
		}
		if err := applyChanges(ctx, x.opts.include, resp.Changes, target); err != nil {
			return err
		}
		if cursor, err = x.advance(ctx, cursor, resp.Cursor); err != nil {
			return err
		}
		if time.Since(logged) > progressEvery {
			x.logger().Info("index: catching up on the change feed", "cursor", cursor, "head", resp.Head)
			logged = time.Now()
		}
	}
}

// applyHandle applies a session handle's events in place of the feed when
// they are all the feed holds from the cursor to the handle's newest event:
// their cursors follow on from the index's, one by one (as when no other
// session was written meanwhile), so reading the feed would only decode
// them again. It returns the handle's newest cursor, and whether it is
// applied up to there.
func (x *Index) applyHandle(ctx context.Context, s session.Session, cursor int64, target changeTarget) (int64, bool, error) {
	events := s.Events()
	newest := events.At(events.Len() - 1).Cursor
	if newest <= cursor {
		x.floor.Store(cursor)
		return newest, true, nil
	}
	first := sort.Search(events.Len(), func(i int) bool { return events.At(i).Cursor > cursor })
	if events.At(first).Cursor != cursor+1 || newest-cursor != int64(events.Len()-first) {
		return newest, false, nil
	}
	var docs []Document
	for i := first; i < events.Len(); i++ {
		if doc, ok := x.opts.include.documentOf(s.ID(), events.At(i)); ok {
			docs = append(docs, doc)
		}
	}
	if err := target.addSession(ctx, Owner{s.AppName(), s.UserID()}, s.ID(), docs); err != nil {
		return newest, false, err
	}
	cursor, err := x.advance(ctx, cursor, newest)
	x.floor.Store(cursor)
	return newest, cursor >= newest, err
}

// advance moves the feed cursor from from to to and returns where it is:
// when a rebuild rewound it meanwhile, the follower goes on from there
// (writing again is harmless).
func (x *Index) advance(ctx context.Context, from, to int64) (int64, error) {
	moved, err := x.position.Advance(ctx, from, to)
	if err != nil || moved {
		return to, err
	}
	return x.position.Cursor(ctx)
}

// progressEvery is how often a long catch-up logs how far along it is.
const progressEvery = 5 * time.Second

// applyChanges applies a page of the change feed to target, a session's
// run of appends at a time.
func applyChanges(ctx context.Context, x Include, changes []session.Change, target changeTarget) error {
	for i := 0; i < len(changes); {
		ch := changes[i]
		o := Owner{ch.AppName, ch.UserID}
		if ch.Kind == session.ChangeSessionDeleted {
			if err := target.clearSession(ctx, o, ch.SessionID); err != nil {
				return err
			}
			i++
			continue
		}
		var docs []Document
		for ; i < len(changes) && changes[i].Kind == session.ChangeEventAppended && changes[i].SessionID == ch.SessionID &&
			changes[i].AppName == ch.AppName && changes[i].UserID == ch.UserID; i++ {
			if doc, ok := x.documentOf(ch.SessionID, changes[i].Event); ok {
				docs = append(docs, doc)
			}
		}
		if err := target.addSession(ctx, o, ch.SessionID, docs); err != nil {
			return err
		}
	}
	return nil
}

// changeTarget is where applyChanges writes: the live store, or a rebuild's.
type changeTarget interface {
	addSession(ctx context.Context, o Owner, sessionID string, docs []Document) error
	clearSession(ctx context.Context, o Owner, sessionID string) error
}

// storeTarget applies changes to a store: the live collection (the
// follower, which writes only what is missing, and a scoped rebuild) or a
// full rebuild's new one.
type storeTarget struct {
	x           *Index
	w           StoreWriter
	skipIndexed bool
	termsOnly   bool                         // vectors come later, from the lane
	kept        map[Owner]map[[2]string]bool // what a scoped rebuild wrote, per owner
}

func (t *storeTarget) addSession(ctx context.Context, o Owner, sessionID string, docs []Document) error {
	if t.kept != nil {
		if t.kept[o] == nil {
			t.kept[o] = map[[2]string]bool{}
		}
		for _, d := range docs {
			t.kept[o][[2]string{d.SessionID, d.EventID}] = true
		}
	}
	if t.skipIndexed {
		var err error
		if docs, err = t.x.missing(ctx, o, sessionID, docs); err != nil {
			return err
		}
	}
	return t.x.writeSkipping(ctx, t.w, o, docs, !t.termsOnly)
}

func (t *storeTarget) clearSession(ctx context.Context, o Owner, sessionID string) error {
	if err := t.w.DeleteSession(ctx, o, sessionID); err != nil {
		return fmt.Errorf("index: deleting session %q from %s: %w", sessionID, t.x.store.Name(), err)
	}
	return nil
}
