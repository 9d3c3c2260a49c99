package index

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"
)

// A term is kept in the file as a 64-bit hash of it, not its text: a
// posting is a few bytes, and no dictionary of every word grows on the
// heap or needs a lookup per word written. Two of one owner's terms
// sharing a hash (odds of about one in 10^11 for an owner with 20,000
// distinct terms) would only merge their postings.
func termHash(term string) int64 {
	h := fnv.New64a()
	h.Write([]byte(term))
	return int64(h.Sum64())
}

// termAt is the i-th distinct term of an encoded document.
func termAt(terms []byte, i int) int64 { return int64(binary.LittleEndian.Uint64(terms[8*i:])) }

// diskDoc is a document as the file keeps it, encoded outside the write lock.
type diskDoc struct {
	Document
	ts     []byte
	length int64
	terms  []byte // each distinct term's hash, 8 bytes little-endian, in order of first use (not kept in the file)
	packed any    // the text as the file keeps it (packText)
	tfs    []int64
	vec    []byte // the unit vector as encodeVector keeps it; nil when it has none
}

func encodeDoc(sd StoredDoc, schema Schema) (diskDoc, error) {
	ts, err := sd.Timestamp.MarshalBinary()
	if err != nil {
		return diskDoc{}, err
	}
	dd := diskDoc{Document: sd.Document, ts: ts, length: int64(len(sd.Terms)), packed: packText(sd.Text)}
	if schema.Terms {
		at := make(map[string]int, len(sd.Terms))
		dd.terms = make([]byte, 0, 8*len(sd.Terms))
		for _, t := range sd.Terms {
			if i, ok := at[t]; ok {
				dd.tfs[i]++
				continue
			}
			at[t] = len(dd.tfs)
			dd.tfs = append(dd.tfs, 1)
			dd.terms = binary.LittleEndian.AppendUint64(dd.terms, uint64(termHash(t)))
		}
	}
	if sd.Vector != nil {
		if len(sd.Vector) != schema.Dimensions {
			return diskDoc{}, errDims(len(sd.Vector), schema.Dimensions)
		}
		u := make([]float32, len(sd.Vector))
		unit(u, sd.Vector)
		dd.vec = encodeVector(u)
	}
	return dd, nil
}

// encodeVector keeps a unit vector in int8 with one scale: four bytes of
// scale, then a byte for each value, a quarter of float32's size on disk
// and in the memtable. Each value is off by at most half a step of 1/127
// of the largest, which moves an encoder's cosines by 0.0005 on average
// and under 0.003 at most (TestInt8VectorsKeepTheirCosines). A vector
// without a finite largest value is kept as zeros: it compares as nothing.
func encodeVector(u []float32) []byte {
	var top float32
	for _, x := range u {
		top = max(top, float32(math.Abs(float64(x))))
	}
	b := make([]byte, 4+len(u))
	if top == 0 || math.IsNaN(float64(top)) || math.IsInf(float64(top), 0) {
		return b
	}
	binary.LittleEndian.PutUint32(b, math.Float32bits(top/127))
	inv := 127 / top
	for i, x := range u {
		b[4+i] = byte(int8(math.Round(float64(x * inv))))
	}
	return b
}

type rowReader interface {
	row(ctx context.Context, query string, args ...any) scanner
}

// ownerID returns the owner's row ID.
func ownerID(ctx context.Context, q rowReader, o Owner) (id int64, found bool, err error) {
	err = q.row(ctx, `SELECT id FROM owners WHERE app = ? AND user = ?`, o.App, o.User).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// writeDocs stores docs, replacing the documents of the same events: new
// ones (most) in memory until the next flush, others through the file. A
// document written again as it was (its vector, embedded in the
// background, coming after its terms) keeps its postings.
func (d *diskDB) writeDocs(ctx context.Context, o Owner, schema Schema, docs []StoredDoc) error {
	encoded := make([]diskDoc, 0, len(docs))
	for _, sd := range docs {
		if !schema.Terms && sd.Vector == nil {
			continue // a vector index has nothing of a document without a vector
		}
		dd, err := encodeDoc(sd, schema)
		if err != nil {
			return err
		}
		encoded = append(encoded, dd)
	}
	if len(encoded) == 0 {
		return nil
	}
	d.gate.RLock()
	staged, err := d.stageNew(ctx, o, encoded)
	d.gate.RUnlock()
	if err != nil || staged {
		if err == nil {
			err = d.staged(ctx)
		}
		return err
	}
	if attached, err := d.attachVectors(ctx, o, encoded); err != nil || attached {
		return err
	}
	done, err := d.settle(ctx) // the file holds every document it may replace
	if err != nil {
		return err
	}
	defer done()
	return d.update(ctx, func(tx diskTx) error {
		w, err := startOwnerWrite(ctx, tx, o)
		if err != nil {
			return err
		}
		for _, dd := range encoded {
			if err := w.put(dd); err != nil {
				return err
			}
		}
		return w.finish()
	})
}

// attachVectors writes the vectors of documents the file holds as they
// are, embedded in the background after their terms were flushed: a
// vector changes no statistic, so nothing needs flushing first. It reports
// false, having written nothing, unless each of docs is such a document.
func (d *diskDB) attachVectors(ctx context.Context, o Owner, docs []diskDoc) (bool, error) {
	if slices.ContainsFunc(docs, func(dd diskDoc) bool { return dd.vec == nil }) {
		return false, nil
	}
	attached := false
	var owner int64
	// Only the owner's vectors change: under a steady load, every other
	// user keeps theirs in memory (their searches read them again only
	// after their own turns are written).
	err := d.commit(ctx, func(tx diskTx) error {
		id, found, err := ownerID(ctx, tx, o)
		if err != nil || !found {
			return err
		}
		owner = id
		nums := make([]int64, len(docs))
		for i, dd := range docs {
			var stored diskDoc
			err := tx.row(ctx, `SELECT id `+docOfRow+`, seq, author, role, ts, length, text FROM docs WHERE owner = ? AND session = ? AND event = ?`,
				id, dd.SessionID, dd.EventID).Scan(&nums[i], &stored.Seq, &stored.Author, &stored.Role, &stored.ts, &stored.length, storedText{&stored.Text})
			if errors.Is(err, sql.ErrNoRows) || err == nil && !sameStored(&stored, &dd) {
				return nil // not only vectors: written another way
			} else if err != nil {
				return err
			}
		}
		for i, dd := range docs {
			if _, err := tx.exec(ctx, `INSERT INTO vectors(id, vec) VALUES(?, ?) ON CONFLICT(id) DO UPDATE SET vec = excluded.vec`,
				rowID(id, nums[i]), dd.vec); err != nil {
				return err
			}
		}
		attached = true
		return nil
	}, func() { d.vectors.wrote([]int64{owner}) })
	return attached, err
}

// sameStored reports whether a document kept (in the file, or in memory)
// for dd's event is dd: its session and event found it. Its terms are
// those of its author and text, under the file's one tokenizer (the
// schema's fingerprint).
func sameStored(stored, dd *diskDoc) bool {
	return stored.Seq == dd.Seq && stored.Author == dd.Author && stored.Role == dd.Role && bytes.Equal(stored.ts, dd.ts) &&
		stored.length == dd.length && stored.Text == dd.Text
}

// stageNew stages docs in memory when the file holds none of them.
func (d *diskDB) stageNew(ctx context.Context, o Owner, docs []diskDoc) (bool, error) {
	id, found, err := ownerID(ctx, d, o)
	if err != nil {
		return false, err
	}
	for _, dd := range docs {
		if !found || d.unflushed(o, eventKey{dd.SessionID, dd.EventID}) {
			continue
		}
		if held, err := d.fileHolds(ctx, id, dd.SessionID, dd.EventID); held || err != nil {
			return false, err
		}
	}
	return d.stage(o, docs), nil
}

// fileHolds reports whether the file holds the owner's document of event.
func (d *diskDB) fileHolds(ctx context.Context, owner int64, sessionID, eventID string) (bool, error) {
	var one int
	err := d.row(ctx, `SELECT 1 FROM docs WHERE owner = ? AND session = ? AND event = ?`, owner, sessionID, eventID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// startOwnerWrite begins writing o's rows in tx, making the owner if need be.
func startOwnerWrite(ctx context.Context, tx diskTx, o Owner) (*ownerWrite, error) {
	w, found, err := ownerWriteOf(ctx, tx, o)
	if err == nil && !found {
		err = tx.row(ctx, `INSERT INTO owners(app, user) VALUES(?, ?) RETURNING id`, o.App, o.User).Scan(&w.owner)
	}
	return w, err
}

// ownerWriteOf begins writing the rows of o, if the file has the owner.
func ownerWriteOf(ctx context.Context, tx diskTx, o Owner) (w *ownerWrite, found bool, err error) {
	w = &ownerWrite{ctx: ctx, tx: tx}
	err = tx.row(ctx, `SELECT id, next FROM owners WHERE app = ? AND user = ?`, o.App, o.User).Scan(&w.owner, &w.next)
	if errors.Is(err, sql.ErrNoRows) {
		return w, false, nil
	}
	return w, err == nil, err
}

// ownerWrite is one transaction's writes to one owner's rows, with the
// change to their BM25 statistics.
type ownerWrite struct {
	ctx        context.Context
	tx         diskTx
	owner      int64
	next       int64         // the owner's next document number
	postings   []termPosting // to insert at finish, in the order of the table's key
	dropped    []int64       // documents whose postings in the file finish deletes first
	docs, size int64         // added to the owner's document count and total length
}

func (w *ownerWrite) put(dd diskDoc) error {
	// Most documents are new: inserting first asks once.
	doc := w.next
	added, err := w.insert(doc, dd)
	if err != nil {
		return err
	}
	if added {
		w.next++
		w.docs++
		w.size += dd.length
		return w.putVector(doc, dd)
	}
	var stored diskDoc
	err = w.tx.row(w.ctx, `SELECT id `+docOfRow+`, seq, author, role, ts, length, text FROM docs WHERE owner = ? AND session = ? AND event = ?`,
		w.owner, dd.SessionID, dd.EventID).Scan(&doc, &stored.Seq, &stored.Author, &stored.Role, &stored.ts, &stored.length, storedText{&stored.Text})
	switch {
	case err != nil:
		return err
	case sameStored(&stored, &dd):
		// the same document: only its vector may be new
	default:
		w.dropPostings(doc)
		if _, err := w.tx.exec(w.ctx, `DELETE FROM docs WHERE id = ?`, rowID(w.owner, doc)); err != nil {
			return err
		}
		w.size += dd.length - stored.length
		if _, err := w.insert(doc, dd); err != nil {
			return err
		}
	}
	return w.putVector(doc, dd)
}

func (w *ownerWrite) putVector(doc int64, dd diskDoc) error {
	if dd.vec != nil {
		_, err := w.tx.exec(w.ctx, `INSERT INTO vectors(id, vec) VALUES(?, ?) ON CONFLICT(id) DO UPDATE SET vec = excluded.vec`,
			rowID(w.owner, doc), dd.vec)
		return err
	}
	return nil
}

// insert writes a document numbered doc (its postings at finish), unless
// the file holds the event's document already.
func (w *ownerWrite) insert(doc int64, dd diskDoc) (bool, error) {
	res, err := w.tx.exec(w.ctx, `INSERT INTO docs(id, owner, session, event, seq, author, role, ts, length, text) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(owner, session, event) DO NOTHING`,
		rowID(w.owner, doc), w.owner, dd.SessionID, dd.EventID, dd.Seq, dd.Author, dd.Role, dd.ts, dd.length, dd.packed)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	for i, tf := range dd.tfs {
		w.postings = append(w.postings, termPosting{termAt(dd.terms, i), diskPosting{doc: doc, tf: tf, length: dd.length}})
	}
	return true, nil
}

// termPosting is a posting with its term, as the postings table keys it.
type termPosting struct {
	term int64
	diskPosting
}

// dropPostings deletes a document's postings: those not written yet now,
// those in the file at finish.
func (w *ownerWrite) dropPostings(doc int64) {
	w.postings = slices.DeleteFunc(w.postings, func(p termPosting) bool { return p.doc == doc })
	w.dropped = append(w.dropped, doc)
}

// remove deletes a document and everything of it.
func (w *ownerWrite) remove(doc, length int64) error {
	w.dropPostings(doc)
	for _, table := range []string{"vectors", "docs"} {
		if _, err := w.tx.exec(w.ctx, `DELETE FROM `+table+` WHERE id = ?`, rowID(w.owner, doc)); err != nil {
			return err
		}
	}
	w.docs--
	w.size -= length
	return nil
}

// finish inserts the postings, in the order of the table's key (so each
// page of it is written once, however many documents of a flush it takes)
// and many a statement, and records the owner's statistics.
func (w *ownerWrite) finish() error {
	if err := w.deleteDropped(); err != nil {
		return err
	}
	slices.SortFunc(w.postings, func(a, b termPosting) int { return cmp.Or(cmp.Compare(a.term, b.term), cmp.Compare(a.doc, b.doc)) })
	const perStatement = 100
	args := make([]any, 0, 5*perStatement)
	for start := 0; start < len(w.postings); start += perStatement {
		part := w.postings[start:min(start+perStatement, len(w.postings))]
		args = args[:0]
		for _, p := range part {
			args = append(args, w.owner, p.term, p.doc, p.tf, p.length)
		}
		if _, err := w.tx.exec(w.ctx, `INSERT INTO postings(owner, term, doc, tf, length) VALUES (?, ?, ?, ?, ?)`+
			strings.Repeat(`, (?, ?, ?, ?, ?)`, len(part)-1), args...); err != nil {
			return err
		}
	}
	w.postings = w.postings[:0]
	_, err := w.tx.exec(w.ctx, `UPDATE owners SET docs = docs + ?, length = length + ?, next = ? WHERE id = ?`, w.docs, w.size, w.next, w.owner)
	return err
}

// deleteDropped deletes the postings of the documents dropped, a few
// hundred documents a pass over the owner's postings: the file keeps no
// list of a document's terms (a third of its row), so their postings are
// found by document. Only deletions and rewrites pay it, and they are rare
// beside writes.
func (w *ownerWrite) deleteDropped() error {
	const perStatement = 500
	for start := 0; start < len(w.dropped); start += perStatement {
		part := w.dropped[start:min(start+perStatement, len(w.dropped))]
		args := make([]any, 0, 1+perStatement)
		args = append(args, w.owner)
		for _, doc := range part {
			args = append(args, doc)
		}
		for len(args) < 1+perStatement { // one statement for every count
			args = append(args, part[0])
		}
		if _, err := w.tx.exec(w.ctx, `DELETE FROM postings WHERE owner = ? AND doc IN (?`+strings.Repeat(`, ?`, perStatement-1)+`)`, args...); err != nil {
			return err
		}
	}
	w.dropped = w.dropped[:0]
	return nil
}

// removeWhere deletes the owner's documents that drop names (by session
// and event), looking only at one session's when session is set.
func (d *diskDB) removeWhere(ctx context.Context, o Owner, drop func(sessionID, eventID string) bool, session string) error {
	done, err := d.settle(ctx)
	if err != nil {
		return err
	}
	defer done()
	return d.update(ctx, func(tx diskTx) error {
		w, found, err := ownerWriteOf(ctx, tx, o)
		if err != nil || !found {
			return err
		}
		type doomed struct{ doc, length int64 }
		query, args := `SELECT id `+docOfRow+`, session, event, length FROM docs WHERE owner = ?`, []any{w.owner}
		if session != "" {
			query, args = query+` AND session = ?`, append(args, session)
		}
		rows, err := tx.query(ctx, query, args...)
		if err != nil {
			return err
		}
		var gone []doomed
		for rows.Next() {
			var dm doomed
			var sid, eid string
			if err := rows.Scan(&dm.doc, &sid, &eid, &dm.length); err != nil {
				rows.Close()
				return err
			}
			if drop(sid, eid) {
				gone = append(gone, dm)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(gone) == 0 {
			return err
		}
		for _, dm := range gone {
			if err := w.remove(dm.doc, dm.length); err != nil {
				return err
			}
		}
		return w.finish()
	})
}

func (d *diskDB) missing(ctx context.Context, o Owner, sessionID string, eventIDs []string) ([]string, error) {
	id, found, err := ownerID(ctx, d, o)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, ev := range eventIDs {
		if d.unflushed(o, eventKey{sessionID, ev}) {
			continue
		}
		if !found {
			missing = append(missing, ev)
			continue
		}
		held, err := d.fileHolds(ctx, id, sessionID, ev)
		if err != nil {
			return nil, err
		}
		if !held {
			missing = append(missing, ev)
		}
	}
	return missing, nil
}

// timeOf reads a timestamp the file keeps.
func timeOf(b []byte) (time.Time, error) {
	var t time.Time
	err := t.UnmarshalBinary(b)
	return t, err
}
