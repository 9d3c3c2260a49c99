package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// Index indexes the session's events that the index does not hold yet.
// When the index follows a session service and this process leads the
// feed, it catches up on the feed to the handle's newest event: from the
// handle itself when it holds every change since the index's cursor, else
// from the feed, so a handle holding only recent events leaves nothing
// out. Otherwise (another replica leads, or there is no feed) it writes
// the handle's newest events that the store lacks. Either way an append
// costs the write and at most one other call to the store.
func (x *Index) Index(ctx context.Context, s session.Session) error {
	if s == nil {
		return fmt.Errorf("%w: session is nil", ErrInvalidArgument)
	}
	if err := validateOwner(s.AppName(), s.UserID()); err != nil {
		return err
	}
	if err := x.usable(ctx); err != nil {
		return err
	}
	events := s.Events()
	if events.Len() == 0 {
		return nil
	}
	newest := events.At(events.Len() - 1).Cursor
	if newest > 0 && newest <= x.floor.Load() {
		return nil
	}
	if x.opts.sessions == nil || newest == 0 || !x.leads.Load() {
		return x.writeNewest(ctx, s)
	}
	if x.catchingUp.Load() { // the catch-up gets to it, in the feed's order
		return nil
	}
	if x.kind != KindVector {
		x.pretokenized.add(x, s, x.floor.Load())
	}
	if err := x.follow(ctx, x.opts.sessions, s); err != nil {
		return err
	}
	if x.lane != nil { // a burst is taken at keyword speed, a sustained rate the embedder cannot keep up with is not
		return x.lane.admit(ctx, newest)
	}
	return nil
}

// writeNewest writes the handle's events past the feed cursor that the
// store lacks, asking the store once: of the newest few, and of more only
// when it holds none of those. What the store holds of the newest stands
// for what is older, so a turn costs work for its new events, not for the
// session's length; older gaps are the follower's.
func (x *Index) writeNewest(ctx context.Context, s session.Session) error {
	events, floor := s.Events(), x.floor.Load()
	// Events are in the order of their cursors: the applied ones are skipped unvisited.
	first := sort.Search(events.Len(), func(i int) bool { c := events.At(i).Cursor; return c == 0 || c > floor })
	o := Owner{s.AppName(), s.UserID()}
	for want := newestFirst; ; want *= 2 {
		var docs []Document
		i := events.Len()
		for i > first && len(docs) < want {
			i--
			if doc, ok := x.opts.include.documentOf(s.ID(), events.At(i)); ok {
				docs = append(docs, doc)
			}
		}
		slices.Reverse(docs)
		missing, err := x.missing(ctx, o, s.ID(), docs)
		if err != nil {
			return err
		}
		if len(missing) < len(docs) || i == first {
			return x.write(ctx, x.store, o, s, missing)
		}
	}
}

// newestFirst is how many of a handle's newest documents Index asks the
// store about first: more than a turn usually adds.
const newestFirst = 8

// missing returns the docs the store does not have yet.
func (x *Index) missing(ctx context.Context, o Owner, sessionID string, docs []Document) ([]Document, error) {
	return inStore(ctx, x, o, sessionID, docs, false)
}

// inStore returns the docs the store holds (held) or lacks (!held), asking it once.
func inStore[D interface{ event() string }](ctx context.Context, x *Index, o Owner, sessionID string, docs []D, held bool) ([]D, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.event()
	}
	absent, err := x.store.Missing(ctx, o, sessionID, ids)
	if err != nil {
		return nil, fmt.Errorf("index: asking %s what is indexed: %w", x.store.Name(), err)
	}
	lacks := make(map[string]bool, len(absent))
	for _, id := range absent {
		lacks[id] = true
	}
	out := docs[:0:0]
	for _, d := range docs {
		if lacks[d.event()] != held {
			out = append(out, d)
		}
	}
	return out, nil
}

// write tokenizes docs, embeds them unless vectors come later, and writes
// them to w.
func (x *Index) write(ctx context.Context, w StoreWriter, o Owner, handle session.Session, docs []Document) error {
	stored, err := x.prepare(ctx, docs, source{ownedBy(o), handle}, x.lane == nil, x.refusedOf(o, docs))
	if err != nil || len(stored) == 0 {
		return err
	}
	if err := w.Write(ctx, o, stored); err != nil {
		return x.failed(ctx, "writing to", err)
	}
	return nil
}

// failed wraps the store's error; when the store does not answer at all it
// is ErrStoreUnavailable, which a client may retry.
func (x *Index) failed(ctx context.Context, doing string, err error) error {
	if errors.Is(err, ErrHealing) { // says what a client may read, and nothing of where
		return err
	}
	if ctx.Err() == nil && x.store.Ready(ctx) != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrStoreUnavailable, doing, x.store.Name(), err)
	}
	return fmt.Errorf("index: %s %s: %w", doing, x.store.Name(), err)
}

// writeSkipping writes docs as write does, except that a document the store
// refuses while it answers is skipped, recorded and logged: the follower and
// a rebuild must go on past one bad document rather than stall for every
// user. A store that does not answer stops it, to be tried again.
func (x *Index) writeSkipping(ctx context.Context, w StoreWriter, o Owner, docs []Document, vectors bool) error {
	stored, err := x.prepare(ctx, docs, source{owner: ownedBy(o)}, vectors, x.refusedOf(o, docs))
	if err != nil {
		return err
	}
	return x.writeStoredSkipping(ctx, w, o, stored)
}

func (x *Index) writeStoredSkipping(ctx context.Context, w StoreWriter, o Owner, stored []StoredDoc) error {
	if len(stored) == 0 {
		return nil
	}
	err := w.Write(ctx, o, stored)
	if err == nil || ctx.Err() != nil {
		return err
	}
	// Which one? Each alone, and a refusal twice over with the store up is the document's.
	for _, d := range stored {
		one := []StoredDoc{d}
		if err = w.Write(ctx, o, one); err == nil {
			continue
		}
		if ctx.Err() != nil {
			return err
		}
		if rerr := x.store.Ready(ctx); rerr != nil {
			return fmt.Errorf("%w: writing to %s: %w", ErrStoreUnavailable, x.store.Name(), err)
		}
		if err = w.Write(ctx, o, one); err != nil {
			x.skip(o, d.Document, err)
		}
	}
	return nil
}

func (x *Index) skip(o Owner, d Document, err error) {
	x.skips.add(SkippedDocument{AppName: o.App, UserID: o.User, SessionID: d.SessionID, EventID: d.EventID, Error: err.Error(), At: time.Now().UTC()})
	x.logger().Error("index: the store refused a document; skipped it (a rebuild tries it again)", "store", x.store.Name(),
		"app", o.App, "user", o.User, "session", d.SessionID, "event", d.EventID, "error", err)
}

// refusedOf records that the embedder refused the text of docs[i], which
// is then indexed without a vector: by its words alone in a hybrid index,
// not at all in a vector index.
func (x *Index) refusedOf(o Owner, docs []Document) func(i int, err error) {
	return func(i int, err error) {
		d := docs[i]
		x.skips.add(SkippedDocument{AppName: o.App, UserID: o.User, SessionID: d.SessionID, EventID: d.EventID,
			Error: "embedding: " + err.Error(), At: time.Now().UTC()})
		x.logger().Error("index: the embedder refused a document's text; it has no vector, and a hybrid index finds it by its words (a rebuild tries it again)",
			"app", o.App, "user", o.User, "session", d.SessionID, "event", d.EventID, "error", err)
	}
}

// Skipped reports the documents the store refused and the follower skipped.
func (x *Index) Skipped() Skips { return x.skips.report() }

// prepare tokenizes docs, and embeds them when vectors is set. A text the
// embedder refuses (see embedSkipping) is reported to refused and left
// without a vector: a vector index leaves its document out.
func (x *Index) prepare(ctx context.Context, docs []Document, from source, vectors bool, refused func(i int, err error)) ([]StoredDoc, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	stored := make([]StoredDoc, len(docs))
	for i, d := range docs {
		stored[i].Document = d
		if x.kind != KindVector {
			stored[i].Terms = x.pretokenized.take(x, &d)
		}
	}
	if x.embedder == nil || !vectors {
		return stored, nil
	}
	vecs, err := x.embedDocs(ctx, docs, from, refused)
	if err != nil {
		return nil, err
	}
	for i := range stored {
		stored[i].Vector = vecs[i]
	}
	if x.kind == KindVector {
		stored = slices.DeleteFunc(stored, func(d StoredDoc) bool { return d.Vector == nil })
	}
	return stored, nil
}

// embedDocs embeds docs, a hybrid index's each with the message before it
// (see befores). When the embedder refuses a text with the message before,
// the document's own is tried alone: what was refused may be the other
// message's.
func (x *Index) embedDocs(ctx context.Context, docs []Document, from source, refused func(i int, err error)) ([][]float32, error) {
	befores := make([]string, len(docs))
	if x.kind == KindHybrid {
		var err error
		if befores, err = x.befores(ctx, docs, from); err != nil {
			return nil, err
		}
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.embeddedText(befores[i])
	}
	var again []int
	vecs, err := x.embedSkipping(ctx, texts, func(i int, err error) {
		if befores[i] == "" {
			refused(i, err)
		} else {
			again = append(again, i)
		}
	})
	if err != nil || len(again) == 0 {
		return vecs, err
	}
	alone := make([]string, len(again))
	for j, i := range again {
		alone[j] = docs[i].spoken()
	}
	vecsAlone, err := x.embedSkipping(ctx, alone, func(j int, err error) { refused(again[j], err) })
	if err != nil {
		return nil, err
	}
	for j, i := range again {
		vecs[i] = vecsAlone[j]
	}
	return vecs, nil
}

// embedSkipping embeds texts, one vector each. When the embedder fails on
// the batch, each text is embedded alone, and a text it fails on twice
// while it embeds probeText between the two is the text's fault (an API's
// limit on input, its content filter): it gets no vector, and refused is
// told, so that one text cannot hold back every later change of every
// user. An embedder that fails on the probe too is down (or refuses
// everything: a key, a model), and stops the batch, to be tried again.
func (x *Index) embedSkipping(ctx context.Context, texts []string, refused func(i int, err error)) ([][]float32, error) {
	vecs, err := x.embed(ctx, texts)
	if err == nil || ctx.Err() != nil {
		return vecs, err
	}
	out := make([][]float32, len(texts))
	for i, text := range texts {
		if out[i], err = x.embedOne(ctx, text); err == nil {
			continue
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if _, perr := x.embedOne(ctx, probeText); perr != nil {
			return nil, err
		}
		if out[i], err = x.embedOne(ctx, text); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			refused(i, err)
		}
	}
	return out, nil
}

// probeText is what embedSkipping asks an embedder to embed to tell a
// refused text from an embedder that is down.
const probeText = "hello"

func (x *Index) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := x.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("index: embedding: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("index: the embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	return vecs, nil
}

func (x *Index) embedOne(ctx context.Context, text string) ([]float32, error) {
	vecs, err := x.embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}
