package index

import (
	"cmp"
	"container/heap"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// bm25 scores the owner's documents holding any of terms (each given
// once) that f keeps, exactly as the in-memory shard does (bm25Shard.search):
// the same statistics over all the owner's documents, the same sums in the
// same order, the same ties broken by recency.
func (d *diskDB) bm25(ctx context.Context, o Owner, terms []string, limit int, f Filter, text textRead) ([]SearchResult, error) {
	if len(terms) == 0 || limit <= 0 {
		return nil, nil
	}
	hashes := make([]int64, len(terms))
	for i, term := range terms {
		hashes[i] = termHash(term)
	}
	d.viewMu.RLock() // no flush commits while the file and memory are read
	defer d.viewMu.RUnlock()
	mem := d.view(o, hashes)
	var owner, live, total int64
	err := d.row(ctx, `SELECT id, docs, length FROM owners WHERE app = ? AND user = ?`, o.App, o.User).Scan(&owner, &live, &total)
	onDisk := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	live, total = live+mem.docs, total+mem.length
	if live == 0 {
		return nil, nil
	}
	n := float64(live)
	avgLen := float64(total) / n
	var filter *keptDocs // nil keeps every document
	if !f.IsZero() {
		filter = &keptDocs{d: d, ctx: ctx, owner: owner, mem: mem, f: f, known: map[int64]bool{}}
	}
	scores := bm25Scores[int64]{}
	var ps []diskPosting
	for _, term := range hashes {
		ps = ps[:0]
		if onDisk {
			if ps, err = d.postings(ctx, owner, term, ps); err != nil {
				return nil, err
			}
		}
		ps = append(ps, mem.postings[term]...)
		df := len(ps)
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for _, p := range ps {
			if filter != nil && !filter.keeps(p.doc) {
				continue
			}
			tf := float64(p.tf)
			scores.add(p.doc, idf*tf*(bm25K1+1)/(tf+bm25K1*(1-bm25B+bm25B*float64(p.length)/avgLen)))
		}
	}
	if filter != nil && filter.err != nil {
		return nil, filter.err
	}
	return d.top(ctx, owner, mem, scores, limit, text)
}

type diskPosting struct{ doc, tf, length int64 }

// postings appends the owner's merged postings of term to ps.
func (d *diskDB) postings(ctx context.Context, owner, term int64, ps []diskPosting) ([]diskPosting, error) {
	rows, err := d.query(ctx, `SELECT doc, tf, length FROM postings WHERE owner = ? AND term = ?`, owner, term)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var p diskPosting
		if err := rows.Scan(&p.doc, &p.tf, &p.length); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, rows.Err()
}

// keptDocs applies a filter to documents by number, reading each once.
type keptDocs struct {
	d     *diskDB
	ctx   context.Context
	owner int64
	mem   *memView
	f     Filter
	known map[int64]bool
	err   error
}

func (k *keptDocs) keeps(doc int64) bool {
	if doc < 0 {
		dd := k.mem.doc(doc)
		return dd != nil && k.f.Keeps(&dd.Document)
	}
	if keep, ok := k.known[doc]; ok || k.err != nil {
		return keep
	}
	docs, err := k.d.load(k.ctx, k.owner, []int64{doc}, noText)
	if err != nil {
		k.err = err
		return false
	}
	keep := docs[doc] != nil && k.f.Keeps(docs[doc])
	k.known[doc] = keep
	return keep
}

// top returns the best-scoring documents, ties broken by recency then
// event, as bm25Shard.top: every document scoring as well as the last one
// kept is read, so the tie is broken among all of them.
func (d *diskDB) top(ctx context.Context, owner int64, mem *memView, scores bm25Scores[int64], limit int, text textRead) ([]SearchResult, error) {
	ranked := make([]int64, 0, len(scores))
	for doc := range scores {
		ranked = append(ranked, doc)
	}
	slices.SortFunc(ranked, func(a, b int64) int { return cmp.Or(cmp.Compare(scores[b].score, scores[a].score), cmp.Compare(a, b)) })
	cut := min(limit, len(ranked))
	if cut == 0 {
		return nil, nil
	}
	end := cut
	for end < len(ranked) && scores[ranked[end]].score == scores[ranked[cut-1]].score {
		end++
	}
	ranked = ranked[:end]
	docs, err := d.docsOf(ctx, owner, mem, ranked, text)
	if err != nil {
		return nil, err
	}
	ranked = slices.DeleteFunc(ranked, func(doc int64) bool { return docs[doc] == nil })
	slices.SortFunc(ranked, func(a, b int64) int {
		if scores[a].score != scores[b].score {
			return cmp.Compare(scores[b].score, scores[a].score)
		}
		da, db := docs[a], docs[b]
		if !da.Timestamp.Equal(db.Timestamp) {
			return db.Timestamp.Compare(da.Timestamp)
		}
		return strings.Compare(da.EventID, db.EventID)
	})
	ranked = ranked[:min(cut, len(ranked))]
	out := make([]SearchResult, len(ranked))
	for i, doc := range ranked {
		out[i] = scores[doc].result(docs[doc])
		textReadAs(&out[i], doc, text)
	}
	return out, nil
}

// docsOf returns the owner's documents numbered docs, from the file (with
// their texts as text says) or the unflushed layers (with their texts).
func (d *diskDB) docsOf(ctx context.Context, owner int64, mem *memView, docs []int64, text textRead) (map[int64]*Document, error) {
	var inFile []int64
	for _, n := range docs {
		if n >= 0 {
			inFile = append(inFile, n)
		}
	}
	out, err := d.load(ctx, owner, inFile, text)
	if err != nil {
		return nil, err
	}
	for _, n := range docs {
		if n < 0 {
			if dd := mem.doc(n); dd != nil {
				out[n] = &dd.Document
			}
		}
	}
	return out, nil
}

// textRead is how much of documents' texts a search reads from the file.
type textRead int

const (
	noText textRead = iota
	// briefText: only texts of at most briefTextLength characters (or
	// compressed bytes), all a brief question can be (creditReplies reads
	// the candidates' for it, see asksBriefly); the others are read for
	// the results kept (textsLater).
	briefText
	fullText
)

// briefTextLength: 20 words of 12 letters.
const briefTextLength = 256

// textColumns is what a statement reads of docs' text for each textRead.
var textColumns = [...]string{noText: `''`, briefText: `CASE WHEN length(text) <= ` + strconv.Itoa(briefTextLength) + ` THEN text END`, fullText: `text`}

// load reads the owner's documents numbered docs, with as much of their
// texts as text says, by number.
func (d *diskDB) load(ctx context.Context, owner int64, docs []int64, text textRead) (map[int64]*Document, error) {
	out := make(map[int64]*Document, len(docs))
	column := textColumns[text]
	const chunk = 32 // a statement for each count of documents, so few counts
	for start := 0; start < len(docs); start += chunk {
		part := docs[start:min(start+chunk, len(docs))]
		args := make([]any, 0, chunk)
		for _, doc := range part {
			args = append(args, rowID(owner, doc))
		}
		for len(args) < chunk { // repeating a document reads it once
			args = append(args, args[0])
		}
		rows, err := d.query(ctx, `SELECT id `+docOfRow+`, session, event, seq, author, role, ts, `+column+
			` FROM docs WHERE id IN (?`+strings.Repeat(`, ?`, chunk-1)+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var doc int64
			var ts []byte
			var dd Document
			if err := rows.Scan(&doc, &dd.SessionID, &dd.EventID, &dd.Seq, &dd.Author, &dd.Role, &ts, storedText{&dd.Text}); err != nil {
				rows.Close()
				return nil, err
			}
			if dd.Timestamp, err = timeOf(ts); err != nil {
				rows.Close()
				return nil, err
			}
			out[doc] = &dd
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nearest returns the owner's documents that f keeps nearest to vec by
// cosine similarity, as the flat store does but from vectors kept in int8:
// one pass over the owner's vectors, which the file keeps together, a dot
// product each.
func (d *diskDB) nearest(ctx context.Context, o Owner, vec []float32, limit int, f Filter, text textRead) ([]SearchResult, error) {
	if limit <= 0 {
		return nil, nil
	}
	d.viewMu.RLock() // no flush commits while the file and memory are read
	defer d.viewMu.RUnlock()
	mem := d.view(o, nil)
	owner, found, err := ownerID(ctx, d, o)
	if err != nil {
		return nil, err
	}
	q := make([]float32, len(vec))
	unit(q, vec)
	best := make(scoreHeap, 0, limit)
	consider := func(doc int64, score float32) {
		switch {
		case len(best) < limit:
			heap.Push(&best, scored{int(doc), score})
		case score > best[0].score:
			best[0] = scored{int(doc), score}
			heap.Fix(&best, 0)
		}
	}
	if found {
		if err := d.scanVectors(ctx, owner, q, f, consider); err != nil {
			return nil, err
		}
	}
	for layer, docs := range mem.layers {
		for i := range docs {
			n := memDocNumber(layer, i)
			raw := mem.vector(n)
			if raw == nil || !f.IsZero() && !f.Keeps(&docs[i].Document) {
				continue
			}
			score, ok := similarity(q, raw)
			if !ok {
				return nil, errStoredDims(len(q))
			}
			consider(n, score)
		}
	}
	order := make([]scored, len(best))
	for n := len(best) - 1; n >= 0; n-- { // the heap gives the worst first
		order[n] = heap.Pop(&best).(scored)
	}
	nums := make([]int64, len(order))
	for i, s := range order {
		nums[i] = int64(s.doc)
	}
	docs, err := d.docsOf(ctx, owner, mem, nums, text)
	if err != nil {
		return nil, err
	}
	out := make([]SearchResult, 0, len(order))
	for _, s := range order {
		if dd := docs[int64(s.doc)]; dd != nil {
			out = append(out, dd.Result(float64(s.score)))
			textReadAs(&out[len(out)-1], int64(s.doc), text)
		}
	}
	return out, nil
}

// textReadAs marks r, the document numbered doc, as given without its
// text when its text was left in the file (every document has some: see
// Include.documentOf).
func textReadAs(r *SearchResult, doc int64, text textRead) {
	if text == briefText && doc >= 0 && r.Content == "" {
		r.textLater, r.doc = true, doc
	}
}

// texts reads the texts results left in the file, by number, or by event
// where a rebuild swapped files meanwhile and numbered them anew; a
// result whose document is gone is left out.
func (d *diskDB) texts(ctx context.Context, o Owner, results []SearchResult) ([]SearchResult, error) {
	d.viewMu.RLock()
	defer d.viewMu.RUnlock()
	owner, found, err := ownerID(ctx, d, o)
	if err != nil {
		return nil, err
	}
	var nums []int64
	for _, r := range results {
		if r.textLater {
			nums = append(nums, r.doc)
		}
	}
	docs := map[int64]*Document{}
	if found {
		if docs, err = d.load(ctx, owner, nums, fullText); err != nil {
			return nil, err
		}
	}
	out := results[:0]
	for _, r := range results {
		if r.textLater {
			dd := docs[r.doc]
			if found && (dd == nil || dd.SessionID != r.SessionID || dd.EventID != r.EventID) {
				if dd, err = d.docOfEvent(ctx, owner, r.SessionID, r.EventID); err != nil {
					return nil, err
				}
			}
			if dd == nil {
				continue
			}
			r.Content, r.textLater, r.doc = dd.Text, false, 0
		}
		out = append(out, r)
	}
	return out, nil
}

// docOfEvent reads the owner's document of an event, with its text, or
// nil when the file has none.
func (d *diskDB) docOfEvent(ctx context.Context, owner int64, sessionID, eventID string) (*Document, error) {
	var dd Document
	err := d.row(ctx, `SELECT session, event, text FROM docs WHERE owner = ? AND session = ? AND event = ?`, owner, sessionID, eventID).
		Scan(&dd.SessionID, &dd.EventID, storedText{&dd.Text})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return &dd, err
}

// scanVectors hands consider each of the owner's vectors in the file that
// f keeps, with its cosine similarity to the unit vector q. Unfiltered,
// they come from memory when the owner was searched since the file last
// changed (ownerVectors); a filter reads them with the documents' fields.
func (d *diskDB) scanVectors(ctx context.Context, owner int64, q []float32, f Filter, consider func(doc int64, score float32)) error {
	if f.IsZero() {
		e := d.vectors.get(owner)
		if e == nil {
			var err error
			if e, err = d.readVectors(ctx, owner); err != nil {
				return err
			}
			d.vectors.put(e)
		}
		for i, doc := range e.docs {
			score, ok := similarity(q, e.vector(i))
			if !ok {
				return errStoredDims(len(q))
			}
			consider(doc, score)
		}
		return nil
	}
	first, last := ownerRows(owner)
	rows, err := d.query(ctx, `SELECT v.id `+docOfRow+`, v.vec, d.session, d.author, d.role, d.ts FROM vectors v JOIN docs d ON d.id = v.id WHERE v.id BETWEEN ? AND ?`, first, last)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var doc int64
		var raw sql.RawBytes
		var meta Document
		var ts []byte
		if err := rows.Scan(&doc, &raw, &meta.SessionID, &meta.Author, &meta.Role, &ts); err != nil {
			return err
		}
		if meta.Timestamp, err = timeOf(ts); err != nil {
			return err
		}
		if !f.Keeps(&meta) {
			continue
		}
		score, ok := similarity(q, raw)
		if !ok {
			return errStoredDims(len(q))
		}
		consider(doc, score)
	}
	return rows.Err()
}

// readVectors reads the owner's vectors from the file, as of the
// generation the entry names.
func (d *diskDB) readVectors(ctx context.Context, owner int64) (*ownerEntry, error) {
	e := d.vectors.reading(owner)
	first, last := ownerRows(owner)
	rows, err := d.query(ctx, `SELECT id `+docOfRow+`, vec FROM vectors WHERE id BETWEEN ? AND ?`, first, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var doc int64
		var raw sql.RawBytes
		if err := rows.Scan(&doc, &raw); err != nil {
			return nil, err
		}
		e.docs, e.vecs = append(e.docs, doc), append(e.vecs, raw...)
		e.ends = append(e.ends, len(e.vecs))
	}
	e.docs, e.ends, e.vecs = slices.Clip(e.docs), slices.Clip(e.ends), slices.Clip(e.vecs) // size counts capacity
	return e, rows.Err()
}

func errStoredDims(want int) error {
	return fmt.Errorf("index: a vector in the file is not one of %d dimensions", want)
}
