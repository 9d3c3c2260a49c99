package index

import (
	"context"
	"fmt"

	"github.com/hectormem/hector/pkg/session"
)

// Progress reports a rebuild: sessions and events read so far, documents
// indexed, and, for rebuilds that replay the change feed, how far along it
// they are (Cursor of Head).
type Progress struct {
	Sessions, Events, Indexed int
	Cursor, Head              int64
	Done                      bool
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
	extract  Extraction
	target   changeTarget
	progress Progress
	reportTo func(Progress)
}

func newReplay(ctx context.Context, x Extraction, target changeTarget, reportTo func(Progress)) *replay {
	if fn, ok := ctx.Value(progressKey{}).(func(Progress)); ok {
		reportTo = fn
	}
	return &replay{extract: x, target: target, reportTo: reportTo}
}

func (r *replay) markOf(ref sessionRef) int64 { return r.target.markOf(ref) }

func (r *replay) addSession(ctx context.Context, ref sessionRef, docs []Document, last int64) error {
	if err := r.target.addSession(ctx, ref, docs, last); err != nil {
		return err
	}
	r.progress.Indexed += len(docs)
	return nil
}

func (r *replay) clearSession(ctx context.Context, ref sessionRef) error {
	return r.target.clearSession(ctx, ref)
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
func (r *replay) user(ctx context.Context, sessions session.Service, o owner) error {
	token := ""
	for {
		page, err := sessions.List(ctx, &session.ListRequest{AppName: o.app, UserID: o.user, PageSize: 100, PageToken: token})
		if err != nil {
			return err
		}
		for _, listed := range page.Sessions {
			if err := ctx.Err(); err != nil {
				return err
			}
			resp, err := sessions.Get(ctx, &session.GetRequest{AppName: o.app, UserID: o.user, SessionID: listed.ID()})
			if err != nil {
				return err
			}
			ref := sessionRef{o, listed.ID()}
			var docs []Document
			var last int64
			for ev := range resp.Session.Events().All() {
				if doc, ok := r.extract.documentOf(ref.id, ev); ok {
					docs = append(docs, doc)
				}
				last = max(last, ev.Seq)
				r.progress.Events++
			}
			if err := r.addSession(ctx, ref, docs, last); err != nil {
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
	seen := map[sessionRef]bool{}
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
			if ref := (sessionRef{owner{ch.AppName, ch.UserID}, ch.SessionID}); !seen[ref] && ch.Kind == session.ChangeEventAppended {
				seen[ref] = true
				r.progress.Sessions++
			}
		}
		r.progress.Events += len(changes)
		if err := applyChanges(ctx, r.extract, changes, r); err != nil {
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

// rebuildFailed says what became of a failed rebuild.
func rebuildFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", errCancelled, ctx.Err())
	}
	return fmt.Errorf("index: rebuild failed; the old index is unchanged: %w", err)
}

// build is an in-process rebuild's private index, swapped in when complete.
type build struct {
	c      *Index
	shards map[owner]shard
	marks  map[sessionRef]int64
}

func (b *build) markOf(ref sessionRef) int64 { return b.marks[ref] }

func (b *build) addSession(ctx context.Context, ref sessionRef, docs []Document, last int64) error {
	if len(docs) > 0 {
		sh := b.shards[ref.owner]
		if sh == nil {
			var err error
			if sh, err = b.c.engine.newShard(ref.owner); err != nil {
				return err
			}
			b.shards[ref.owner] = sh
		}
		if err := sh.add(ctx, docs); err != nil {
			return err
		}
	}
	b.marks[ref] = max(b.marks[ref], last)
	return nil
}

func (b *build) clearSession(ctx context.Context, ref sessionRef) error {
	delete(b.marks, ref)
	if sh := b.shards[ref.owner]; sh != nil {
		return sh.removeSession(ctx, ref.id)
	}
	return nil
}

func (c *Index) Rebuild(ctx context.Context, sessions session.Service, appName, userID string) error {
	if err := validateRebuild(sessions, appName, userID); err != nil {
		return err
	}
	b := &build{c: c, shards: map[owner]shard{}, marks: map[sessionRef]int64{}}
	r := newReplay(ctx, c.opts.extract, b, c.opts.progress)
	var cursor int64
	var err error
	if userID != "" {
		err = r.user(ctx, sessions, owner{appName, userID})
	} else {
		cursor, err = r.feed(ctx, sessions, appName)
	}
	if err != nil {
		for _, sh := range b.shards {
			c.engine.dropShard(sh)
		}
		return rebuildFailed(ctx, err)
	}
	c.swapIn(b, appName, userID, cursor)
	r.done()
	return c.Save()
}

// swapIn replaces the live shards in the rebuild's scope with the rebuilt ones.
func (c *Index) swapIn(b *build, appName, userID string, cursor int64) {
	inScope := func(o owner) bool { return (appName == "" || o.app == appName) && (userID == "" || o.user == userID) }
	c.swapMu.Lock()
	c.mu.Lock()
	var old []shard
	for o, sh := range c.shards {
		if inScope(o) {
			old = append(old, sh)
			delete(c.shards, o)
		}
	}
	for ref := range c.marks {
		if inScope(ref.owner) {
			delete(c.marks, ref)
		}
	}
	for o, sh := range b.shards {
		c.shards[o] = sh
	}
	for ref, m := range b.marks {
		c.marks[ref] = m
	}
	if appName == "" { // a full rebuild replayed the feed and fits the configuration again
		c.cursor, c.stale = cursor, nil
	}
	c.mu.Unlock()
	c.swapMu.Unlock()
	for _, sh := range old {
		c.engine.dropShard(sh)
	}
}
