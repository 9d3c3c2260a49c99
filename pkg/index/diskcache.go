package index

import (
	"container/list"
	"sync"
)

// ownerVectorsLimit bounds the bytes of vectors the file's searches keep
// between them: about 40,000 vectors of 384 values, in int8 as the file
// keeps them.
const ownerVectorsLimit = 16 << 20

// ownerVectors keeps the file's vectors of the owners searched last, so
// that a user's next search reads them from memory instead of again row by
// row from the file, which took most of a vector search's time (1.2 of
// 1.7 ms for a LoCoMo user's 600 turns). Every commit to the file drops
// what it may have changed: the owners a flush wrote or a late vector was
// attached to (wrote), everything after any other write (changed). No search sees a vector the file has since
// dropped or misses one it has since gained, an erased user's vectors
// leave memory with their rows, and under steady appends a user keeps
// their vectors until their own turns are flushed.
type ownerVectors struct {
	mu         sync.Mutex
	generation uint64 // commits so far
	size       int
	lru        *list.List // of *ownerEntry, most recently used first
	byOwner    map[int64]*list.Element
}

type ownerEntry struct {
	owner      int64
	generation uint64  // of the file it was read from
	docs       []int64 // the owner's documents holding a vector, in the file's order
	ends       []int   // where each one's vector ends in vecs
	vecs       []byte  // their vectors, encoded as the file keeps them, one after another
}

// size is the bytes the entry holds.
func (e *ownerEntry) size() int { return cap(e.vecs) + 8*cap(e.docs) + 8*cap(e.ends) }

// vector is the i-th document's vector.
func (e *ownerEntry) vector(i int) []byte {
	start := 0
	if i > 0 {
		start = e.ends[i-1]
	}
	return e.vecs[start:e.ends[i]]
}

func newOwnerVectors() *ownerVectors {
	return &ownerVectors{lru: list.New(), byOwner: map[int64]*list.Element{}}
}

// reading starts reading an owner's vectors from the file: the entry to
// fill and put.
func (c *ownerVectors) reading(owner int64) *ownerEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &ownerEntry{owner: owner, generation: c.generation}
}

// get returns the owner's entry, or nil.
func (c *ownerVectors) get(owner int64) *ownerEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byOwner[owner]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*ownerEntry)
}

// put keeps e, unless the file changed since it was read or it is larger
// than the limit, dropping the least recently used entries past it.
func (c *ownerVectors) put(e *ownerEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := e.size()
	if e.generation != c.generation || size > ownerVectorsLimit {
		return
	}
	if el, ok := c.byOwner[e.owner]; ok {
		c.remove(el)
	}
	c.byOwner[e.owner] = c.lru.PushFront(e)
	c.size += size
	for c.size > ownerVectorsLimit {
		c.remove(c.lru.Back())
	}
}

func (c *ownerVectors) remove(el *list.Element) {
	e := c.lru.Remove(el).(*ownerEntry)
	delete(c.byOwner, e.owner)
	c.size -= e.size()
}

// changed is called after a commit to the file that may have changed
// anyone's vectors (deletions, erasures, rebuilds): it drops every entry.
// Reads begun before it are not kept (put).
func (c *ownerVectors) changed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	c.lru.Init()
	clear(c.byOwner)
	c.size = 0
}

// wrote is called after a commit that wrote only the given owners' rows
// (a flush): it drops their entries and keeps the others'. Reads begun
// before it are not kept (put), whoever they read.
func (c *ownerVectors) wrote(owners []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	for _, o := range owners {
		if el, ok := c.byOwner[o]; ok {
			c.remove(el)
		}
	}
}
