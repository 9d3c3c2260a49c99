package index

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// Progress reports a rebuild: sessions and events read so far, documents
// indexed, and, for rebuilds that replay the change feed, how far along it
// they are (Cursor of Head).
type Progress struct {
	Sessions int   `json:"sessions"`
	Events   int   `json:"events"`
	Indexed  int   `json:"indexed"`
	Cursor   int64 `json:"cursor"`
	Head     int64 `json:"head"`
	Done     bool  `json:"done"`
}

type progressKey struct{}

// WithRebuildProgress returns a context whose rebuilds report to fn, for
// one call (WithProgress sets it for every rebuild of an index).
func WithRebuildProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// replay reads the source of truth into a target (a rebuild's private
// state), counting what it reads and reporting progress as it goes. Every
// index type rebuilds through it.
type replay struct {
	include  Include
	target   changeTarget
	progress Progress
	reportTo func(Progress)
}

func newReplay(ctx context.Context, x Include, target changeTarget, reportTo func(Progress)) *replay {
	if fn, ok := ctx.Value(progressKey{}).(func(Progress)); ok {
		reportTo = fn
	}
	return &replay{include: x, target: target, reportTo: reportTo}
}

func (r *replay) addSession(ctx context.Context, o Owner, sessionID string, docs []Document) error {
	if err := r.target.addSession(ctx, o, sessionID, docs); err != nil {
		return err
	}
	r.progress.Indexed += len(docs)
	return nil
}

func (r *replay) clearSession(ctx context.Context, o Owner, sessionID string) error {
	return r.target.clearSession(ctx, o, sessionID)
}

func (r *replay) report() {
	if r.reportTo != nil {
		r.reportTo(r.progress)
	}
}

func (r *replay) done() {
	r.progress.Done = true
	r.report()
}

// user reads one user's sessions in full.
func (r *replay) user(ctx context.Context, sessions session.Service, o Owner) error {
	token := ""
	for {
		page, err := sessions.List(ctx, &session.ListRequest{AppName: o.App, UserID: o.User, PageSize: 100, PageToken: token})
		if err != nil {
			return err
		}
		for _, listed := range page.Sessions {
			if err := ctx.Err(); err != nil {
				return err
			}
			resp, err := sessions.Get(ctx, &session.GetRequest{AppName: o.App, UserID: o.User, SessionID: listed.ID()})
			if err != nil {
				return err
			}
			events := resp.Session.Events()
			r.progress.Events += events.Len()
			if err := r.addSession(ctx, o, listed.ID(), documentsOf(r.include, listed.ID(), events)); err != nil {
				return err
			}
			r.progress.Sessions++
			r.report()
		}
		if token = page.NextPageToken; token == "" {
			return nil
		}
	}
}

// feed replays the change feed from its start, keeping one app's changes
// (or all, for appName ""), and returns where it ended.
func (r *replay) feed(ctx context.Context, sessions session.Service, appName string) (int64, error) {
	var cursor int64
	seen := map[[3]string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: cursor, Limit: 1000})
		if err != nil {
			return 0, err
		}
		if len(resp.Changes) == 0 {
			return cursor, nil
		}
		changes := resp.Changes
		if appName != "" {
			changes = nil
			for _, ch := range resp.Changes {
				if ch.AppName == appName {
					changes = append(changes, ch)
				}
			}
		}
		for _, ch := range changes {
			if ref := [3]string{ch.AppName, ch.UserID, ch.SessionID}; !seen[ref] && ch.Kind == session.ChangeEventAppended {
				seen[ref] = true
				r.progress.Sessions++
			}
		}
		r.progress.Events += len(changes)
		if err := applyChanges(ctx, r.include, changes, r); err != nil {
			return 0, err
		}
		cursor = resp.Cursor
		r.progress.Cursor, r.progress.Head = cursor, resp.Head
		r.report()
	}
}

// validateRebuild checks a rebuild's arguments.
func validateRebuild(sessions session.Service, appName, userID string) error {
	if sessions == nil {
		return fmt.Errorf("%w: Rebuild needs the session service to read from", ErrInvalidArgument)
	}
	if appName == "" && userID != "" {
		return fmt.Errorf("%w: user %q given without its app", ErrInvalidArgument, userID)
	}
	return nil
}

var errCancelled = errors.New("index: rebuild cancelled; the old index is unchanged")

// rebuildFailed says what became of a failed rebuild.
func rebuildFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", errCancelled, ctx.Err())
	}
	return fmt.Errorf("index: rebuild failed; the old index is unchanged: %w", err)
}

// Rebuild replays the sessions into the store. A full rebuild (appName
// "") writes a new collection beside the live one and switches to it when
// complete, then leaves what was appended meanwhile to the follower. A
// rebuild of one app or user rewrites its documents in place and then
// deletes the ones the sessions no longer hold: searches meanwhile see the
// old documents or the rewritten ones, which are the same.
func (x *Index) Rebuild(ctx context.Context, sessions session.Service, appName, userID string) error {
	if err := validateRebuild(sessions, appName, userID); err != nil {
		return err
	}
	if err := x.open(ctx); err != nil {
		return err
	}
	start := time.Now().UTC()
	x.forgetting(true)
	var err error
	if appName == "" {
		err = x.rebuildAll(ctx, sessions)
	} else if err = x.staleness(); err != nil {
		err = fmt.Errorf("%w (all of it: a rebuild of one app or user cannot change how the collection was built)", err)
	} else {
		err = x.rebuildScope(ctx, sessions, appName, userID)
	}
	// A user forgotten while the rebuild ran may have been read before:
	// forgotten again, in what it made.
	for _, o := range x.forgetting(false) {
		if _, ferr := x.Forget(context.WithoutCancel(ctx), o.App, o.User); ferr != nil {
			err = errors.Join(err, fmt.Errorf("index: forgetting again a user erased during the rebuild: %w", ferr))
		}
	}
	if err == nil { // every document was tried again: what it skipped anew is logged anew
		x.skips.forget(appName, userID, start)
	}
	return err
}

// startAnew replaces an in-process index made another way with an empty
// one of this configuration, its cursors at the feed's start, so that the
// catch-up at start builds it from the change feed: in the background
// when there is much of it, with searches answering from what is applied.
// A start then never waits for the whole feed, as a rebuild would make it.
func (x *Index) startAnew(ctx context.Context) error {
	return x.swapIn(ctx, x.opts.sessions, func(StoreBuild) (int64, error) { return 0, nil })
}

func (x *Index) rebuildAll(ctx context.Context, sessions session.Service) error {
	var r *replay
	err := x.swapIn(ctx, sessions, func(b StoreBuild) (int64, error) {
		// With background vectors the rebuild writes terms, which is quick,
		// and the lane embeds everything again from the start of the feed.
		r = newReplay(ctx, x.opts.include, &storeTarget{x: x, w: b, termsOnly: x.lane != nil}, x.opts.progress)
		return r.feed(ctx, sessions, "")
	})
	if err == nil {
		r.done()
	}
	return err
}

// swapIn makes a new collection of this configuration, has fill write it
// from sessions up to a cursor of the change feed, and puts it in the old
// one's place, the index's cursor at that one and its vectors' at the
// feed's start. A file is bound to the sessions as they were before fill
// read them: an erasure meanwhile is recorded by its own Forget.
func (x *Index) swapIn(ctx context.Context, sessions session.Service, fill func(StoreBuild) (cursor int64, err error)) error {
	var lin session.Lineage
	if sessions != nil {
		var err error
		if lin, _, err = lineageOf(ctx, sessions); err != nil {
			return rebuildFailed(ctx, err)
		}
	}
	b, err := x.store.Begin(ctx, x.schema())
	if err != nil {
		return rebuildFailed(ctx, err)
	}
	cursor, err := fill(b)
	if err == nil {
		err = b.Commit(ctx)
	}
	if err != nil {
		if aerr := b.Abort(context.WithoutCancel(ctx)); aerr != nil {
			x.logger().Warn("index: could not drop an unfinished rebuild's collection", "store", x.store.Name(), "error", aerr)
		}
		return rebuildFailed(ctx, err)
	}
	x.mu.Lock()
	x.fits, x.stale = true, nil
	x.mu.Unlock()
	// Appends after cursor may have gone to the old collection: the
	// follower applies them to the new one from there.
	if x.lane != nil {
		x.lane.behind.Store(true)
		if err := x.lane.position.Rewind(ctx, 0); err != nil {
			return fmt.Errorf("index: the rebuild is live but its vectors' cursor could not be saved: %w", err)
		}
		x.lane.publish(0)
	}
	if err := x.position.Rewind(ctx, cursor); err != nil {
		return fmt.Errorf("index: the rebuild is live but its cursor could not be saved: %w", err)
	}
	return x.bindFile(ctx, sessions, lin)
}

func (x *Index) rebuildScope(ctx context.Context, sessions session.Service, appName, userID string) error {
	owners := []Owner{{appName, userID}}
	if userID == "" {
		var err error
		if owners, err = ownersOf(ctx, sessions, appName); err != nil {
			return rebuildFailed(ctx, err)
		}
	}
	t := &storeTarget{x: x, w: x.store, kept: map[Owner]map[[2]string]bool{}}
	r := newReplay(ctx, x.opts.include, t, x.opts.progress)
	// Sessions as they are now, not the feed: replaying the feed into the
	// live collection would show deleted sessions again for a while.
	for _, o := range owners {
		if err := r.user(ctx, sessions, o); err != nil {
			return rebuildFailed(ctx, err)
		}
	}
	for _, o := range owners {
		kept := t.kept[o]
		err := x.store.Prune(ctx, o, func(sessionID, eventID string) bool { return kept[[2]string{sessionID, eventID}] })
		if err != nil {
			return fmt.Errorf("index: rebuild wrote every document but could not delete stale ones: %w", err)
		}
	}
	r.done()
	return nil
}

// ownersOf lists the users of one app that the change feed has seen.
func ownersOf(ctx context.Context, sessions session.Service, appName string) ([]Owner, error) {
	var out []Owner
	seen := map[Owner]bool{}
	for cursor := int64(0); ; {
		resp, err := sessions.Changes(ctx, &session.ChangesRequest{After: cursor, Limit: session.MaxChangesLimit})
		if err != nil {
			return nil, err
		}
		if len(resp.Changes) == 0 {
			return out, nil
		}
		for _, ch := range resp.Changes {
			if o := (Owner{ch.AppName, ch.UserID}); ch.AppName == appName && !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
		cursor = resp.Cursor
	}
}
