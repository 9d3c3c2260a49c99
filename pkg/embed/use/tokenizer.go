package use

import (
	"strings"

	"golang.org/x/text/unicode/norm"
)

// tokenizer splits text into the model's SentencePiece pieces as the
// TF.js Universal Sentence Encoder does: NFKC, "▁" for each space and at
// the start, then the segmentation whose pieces' scores sum highest
// (Viterbi over a trie of the vocabulary); a symbol no piece begins with
// is unknown (id 0), and unknowns in a row count once.
type tokenizer struct {
	pieces []Piece
	root   *trieNode
}

// reservedPieces are the vocabulary's first entries (unknown, <s>, </s>,
// extra ids), which text never becomes.
const reservedPieces = 6

type trieNode struct {
	children map[rune]*trieNode
	id       int // the piece ending here, -1 when none
}

func newTokenizer(pieces []Piece) *tokenizer {
	t := &tokenizer{pieces: pieces, root: &trieNode{children: map[rune]*trieNode{}, id: -1}}
	for id := reservedPieces; id < len(pieces); id++ {
		node := t.root
		for _, r := range pieces[id].Text {
			next := node.children[r]
			if next == nil {
				next = &trieNode{children: map[rune]*trieNode{}, id: -1}
				node.children[r] = next
			}
			node = next
		}
		node.id = id
	}
	return t
}

// match is a piece found at a position: its id, length in symbols, score.
type match struct {
	id, length int
	score      float32
}

// encode returns text's piece ids.
func (t *tokenizer) encode(text string) []int {
	text = norm.NFKC.String(text)
	if text == "" {
		return nil
	}
	symbols := []rune("▁" + strings.ReplaceAll(text, " ", "▁"))
	n := len(symbols)
	// ending[e] lists the pieces that end at e, by where they start
	// (ascending) and, for one start, shortest first: the order in which
	// the reference implementation weighs them, which decides ties.
	ending := make([][]match, n+1)
	for i := range n {
		found := false
		node := t.root.children[symbols[i]]
		for j := i; node != nil; {
			if node.id >= 0 {
				ending[j+1] = append(ending[j+1], match{node.id, j + 1 - i, t.pieces[node.id].Score})
				found = true
			}
			if j++; j >= n {
				break
			}
			node = node.children[symbols[j]]
		}
		if !found {
			ending[i+1] = append(ending[i+1], match{0, 1, 0})
		}
	}
	best := make([]float32, n+1)
	word := make([]match, n+1)
	for end := 0; end <= n; end++ {
		for _, m := range ending[end] {
			score := m.score + best[end-m.length]
			if best[end] == 0 || score >= best[end] {
				best[end], word[end] = score, m
			}
		}
	}
	// Walking back, a piece spans its text's length in UTF-16 units, as
	// the reference measures it (the same as its symbols but for pieces
	// outside the Basic Multilingual Plane).
	var ids []int
	for at := n; at > 0; at -= utf16Len(t.pieces[word[at].id].Text) {
		ids = append(ids, word[at].id)
	}
	out := make([]int, 0, len(ids))
	for i := len(ids) - 1; i >= 0; i-- {
		if ids[i] == 0 && len(out) > 0 && out[len(out)-1] == 0 {
			continue
		}
		out = append(out, ids[i])
	}
	return out
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}
