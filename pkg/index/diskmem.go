package index

import (
	"context"
	"log/slog"
	"maps"
	"time"
)

// The index file takes new documents in memory first and writes them in
// batches, as a log-structured store does: an append's turn is a few
// microseconds on the heap, and the file gets one transaction for
// thousands of turns, each page of its postings written once, where a
// transaction each cost an append more than the append itself (bench/scale,
// LongMemEval's turns over HTTP, 8 writers: 1,287 appends a second with a
// transaction each, 2,133 batched, 2,334 with the index on the heap). The
// change feed is the write-ahead log: the file's cursors move with the
// batch that holds what they stand for, so a crash loses only what the
// feed gives back at the next start.

// Flushing: at least every flushEvery, and at once past flushAt documents;
// past maxUnflushed a writer waits for the flush (memory stays bounded
// when the disk is slower than the writers).
const (
	flushAt      = 2048
	maxUnflushed = 16384
	flushEvery   = time.Second
)

// checkpointEvery: the journal is copied into the file this often while
// writes come; a page written by several flushes meanwhile is copied once.
const checkpointEvery = 5 * time.Second

// memtable is documents written since a flush, by owner. Its documents
// are numbered below zero (memDocNumber), so that a search scores them
// beside the file's with the same code.
type memtable struct {
	owners  map[Owner]*memOwner
	docs    int
	cursors map[string]int64 // the cursors as they stood when the batch was cut (for the flushing one)
}

// memOwner is one owner's unflushed documents. Documents are only
// appended (a document written again goes through the file): a search
// may read the ones it saw after the lock is released.
type memOwner struct {
	docs     []diskDoc
	byEvent  map[eventKey]int32
	postings map[int64][]diskPosting
	vecs     map[int32][]byte // vectors that came after the document (embedded in the background)
	length   int64
}

func newMemtable() *memtable { return &memtable{owners: map[Owner]*memOwner{}} }

// memDocNumber numbers the i-th document of layer (0: flushing, 1: the
// current one) below zero.
func memDocNumber(layer, i int) int64 { return -(int64(layer)<<32 | int64(i)) - 1 }

func memDocOf(n int64) (layer, i int) {
	k := -n - 1
	return int(k >> 32), int(k & (1<<32 - 1))
}

func (m *memtable) holds(o Owner, key eventKey) bool {
	if m == nil || m.owners[o] == nil {
		return false
	}
	_, ok := m.owners[o].byEvent[key]
	return ok
}

func (m *memtable) add(o Owner, dd diskDoc) {
	mo := m.owners[o]
	if mo == nil {
		mo = &memOwner{byEvent: map[eventKey]int32{}, postings: map[int64][]diskPosting{}}
		m.owners[o] = mo
	}
	i := int32(len(mo.docs))
	mo.docs = append(mo.docs, dd)
	mo.byEvent[eventKey{dd.SessionID, dd.EventID}] = i
	mo.length += dd.length
	for j, tf := range dd.tfs {
		term := termAt(dd.terms, j)
		mo.postings[term] = append(mo.postings[term], diskPosting{doc: int64(i), tf: tf, length: dd.length})
	}
	m.docs++
}

// memView is what a search of one owner sees of the unflushed layers.
type memView struct {
	docs, length int64
	layers       [2][]diskDoc            // by layer, the owner's documents
	vecs         [2]map[int32][]byte     // and their late vectors
	postings     map[int64][]diskPosting // by term, numbered by memDocNumber
}

func (v *memView) doc(n int64) *diskDoc {
	layer, i := memDocOf(n)
	if layer > 1 || i >= len(v.layers[layer]) {
		return nil
	}
	return &v.layers[layer][i]
}

func (v *memView) vector(n int64) []byte {
	layer, i := memDocOf(n)
	if vec := v.vecs[layer][int32(i)]; vec != nil {
		return vec
	}
	return v.layers[layer][i].vec
}

// view copies what a search of o for terms needs from the unflushed
// layers. Callers hold viewMu for reading, so no flush commits meanwhile.
func (d *diskDB) view(o Owner, terms []int64) *memView {
	d.memMu.Lock()
	defer d.memMu.Unlock()
	v := &memView{postings: map[int64][]diskPosting{}}
	for layer, m := range [2]*memtable{d.flushing, d.mem} {
		if m == nil || m.owners[o] == nil {
			continue
		}
		mo := m.owners[o]
		v.docs += int64(len(mo.docs))
		v.length += mo.length
		v.layers[layer] = mo.docs[:len(mo.docs):len(mo.docs)]
		v.vecs[layer] = maps.Clone(mo.vecs)
		for _, t := range terms {
			for _, p := range mo.postings[t] {
				p.doc = memDocNumber(layer, int(p.doc))
				v.postings[t] = append(v.postings[t], p)
			}
		}
	}
	return v
}

// unflushed reports whether the layers hold the owner's event.
func (d *diskDB) unflushed(o Owner, key eventKey) bool {
	d.memMu.Lock()
	defer d.memMu.Unlock()
	return d.mem.holds(o, key) || d.flushing.holds(o, key)
}

// stage adds new documents to the current layer, or, for a document the
// current layer holds already, its vector. It reports false, having done
// nothing, when any of docs is anywhere else (the flushing layer), to be
// written through the file.
func (d *diskDB) stage(o Owner, docs []diskDoc) bool {
	d.memMu.Lock()
	defer d.memMu.Unlock()
	for _, dd := range docs {
		if d.flushing.holds(o, eventKey{dd.SessionID, dd.EventID}) {
			return false
		}
	}
	for _, dd := range docs {
		key := eventKey{dd.SessionID, dd.EventID}
		mo := d.mem.owners[o]
		if !d.mem.holds(o, key) {
			d.mem.add(o, dd)
			continue
		}
		i := mo.byEvent[key]
		if !sameStored(&mo.docs[i], &dd) {
			return false // cannot happen for docs checked by the caller; kept whole
		}
		if dd.vec != nil {
			if mo.vecs == nil {
				mo.vecs = map[int32][]byte{}
			}
			mo.vecs[i] = dd.vec
		}
	}
	return true
}

// unflushedCount is how many documents wait for a flush.
func (d *diskDB) unflushedCount() int {
	d.memMu.Lock()
	defer d.memMu.Unlock()
	n := d.mem.docs
	if d.flushing != nil {
		n += d.flushing.docs
	}
	return n
}

// flush writes the unflushed documents and the cursors to the file in one
// transaction. The commit and the flushed layer's end are one step for
// searches (viewMu), which never count a document twice nor miss one.
func (d *diskDB) flush(ctx context.Context) error {
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	d.memMu.Lock()
	if d.flushing == nil { // else an earlier flush failed: its batch goes first, with its cursors
		if d.mem.docs == 0 && !d.cursorsMoved {
			d.memMu.Unlock()
			return nil
		}
		d.flushing, d.mem = d.mem, newMemtable()
		d.flushing.cursors = maps.Clone(d.cursors)
		d.cursorsMoved = false
	}
	batch := d.flushing
	d.memMu.Unlock()

	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	tx, err := d.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	t := diskTx{d, tx}
	written := make([]int64, 0, len(batch.owners))
	err = func() error {
		for o, mo := range batch.owners {
			w, err := startOwnerWrite(ctx, t, o)
			if err != nil {
				return err
			}
			written = append(written, w.owner)
			for i, dd := range mo.docs {
				if vec := mo.vecs[int32(i)]; vec != nil {
					dd.vec = vec
				}
				if err := w.put(dd); err != nil {
					return err
				}
			}
			if err := w.finish(); err != nil {
				return err
			}
		}
		return setMeta(ctx, t, cursorMeta(batch.cursors))
	}()
	if err != nil {
		tx.Rollback()
		return err
	}
	d.viewMu.Lock()
	defer d.viewMu.Unlock()
	defer d.vectors.wrote(written)
	if err := tx.Commit(); err != nil {
		return err
	}
	d.committed.Store(true)
	d.memMu.Lock()
	d.flushing = nil
	d.memMu.Unlock()
	return nil
}

// cursorMeta is cursors as the file's meta records them.
func cursorMeta(cursors map[string]int64) map[string]any {
	values := make(map[string]any, len(cursors))
	for k, v := range cursors {
		values[k] = v
	}
	return values
}

// flusher flushes every flushEvery, and when kicked, until stop is
// closed; and checkpoints the file's journal every checkpointEvery.
func (d *diskDB) flusher(logger func() *slog.Logger) {
	defer close(d.flusherDone)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	checkpointed := time.Now()
	for {
		select {
		case <-d.stop:
			return
		case <-tick.C:
		case <-d.kick:
		}
		if err := d.flush(context.Background()); damaged(err) && d.onDamage.Load() != nil {
			(*d.onDamage.Load())(err)
		} else if err != nil {
			logger().Warn("index: writing recent documents to the index file failed; retrying (they are searched meanwhile, and a restart takes them from the change feed)",
				"error", err)
		}
		if time.Since(checkpointed) < checkpointEvery {
			continue
		}
		checkpointed = time.Now()
		if err := d.checkpointJournal(context.Background()); err != nil {
			logger().Warn("index: copying the index file's journal into it failed; retrying", "error", err)
		}
	}
}

// staged is what a writer does after staging: kick the flusher past
// flushAt, and wait for it past maxUnflushed.
func (d *diskDB) staged(ctx context.Context) error {
	n := d.unflushedCount()
	if n < flushAt {
		return nil
	}
	if n < maxUnflushed {
		select {
		case d.kick <- struct{}{}:
		default:
		}
		return nil
	}
	return d.flush(ctx)
}

// settle flushes and keeps writes from being staged until done is
// called: what deletes or rewrites documents in the file sees them all
// there, and nothing staged meanwhile escapes it.
func (d *diskDB) settle(ctx context.Context) (done func(), err error) {
	d.gate.Lock()
	if err := d.flush(ctx); err != nil {
		d.gate.Unlock()
		return nil, err
	}
	return d.gate.Unlock, nil
}
