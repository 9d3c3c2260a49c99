package index

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// SignalReply names the signal of a result credited as the reply to a
// short question among the candidates: its rank is the question's, its
// score what the question gave.
const SignalReply = "reply"

// Replies are how a conversation answers: a short turn that asks ("What
// made you decide to run again?") holds a question's words, and the turn
// after it, the reply ("After my last run, I saw the impact I could
// make"), holds its answer. So such a turn gives half its score to its
// reply when the reply is among the candidates, and keeps the other half.
// A long turn that ends with a question ("I just got a Fitbit… which
// plan should I pick?") says something itself, and gives nothing.
//
// On LoCoMo's development half (hector eval) this took keyword search from
// 0.326 to 0.363 hit@1 and 0.513 to 0.546 recall@5, and hybrid search with
// minilm from 0.377 to 0.416 and 0.551 to 0.582; on LongMemEval's, whose
// questions are the user's own long turns, it moved no figure by more than
// a question. Handing on a quarter did less for both; three quarters
// helped hybrid search's hit@1 by one point more and cost keyword search's
// two. Holding back long asking turns too cost LongMemEval's turn-level
// hit@1 nine points.
const (
	replyShare     = 0.5
	shortTurnWords = 20
	// replyGap is how far after a question its reply comes: the next
	// event. Letting it come up to four events later (past a tool call and
	// its result, which are no documents) credited the wrong turns more
	// often than the right ones: LoCoMo's hit@1 fell 0.9 points.
	replyGap = 1
)

// creditReplies moves scores from short questions to their replies among
// results (ordered best first), in place, and orders them again. What a
// question gives is half of what its score exceeds floor: 0 for keyword
// and hybrid scores, the embedder's similarity floor for a vector search's
// similarities. An encoder puts every text rather near every other
// (e5-small's unrelated pairs come out 0.62 to 0.73 similar), so half of
// a question's whole similarity lifted its reply above every answer. On
// the development halves, vector search with e5-small found 0.336 hit@1
// and 0.620 recall@5 on LoCoMo so, 0.388 and 0.623 from its floor (0.392
// and 0.609 crediting nothing); LongMemEval's recall_all@5 and ndcg_any@5
// rose from 0.149 and 0.178 (its assistant's long replies to the user's
// questions crowding out the rest) to 0.881 and 0.919. With minilm,
// LoCoMo's rose from 0.198 and 0.426 to 0.229 and 0.436.
func creditReplies(results []SearchResult, floor float64) {
	var given []float64 // from the scores as they came; nil while none asks
	for i, r := range results {
		if asksBriefly(r.Content) {
			if given == nil {
				given = make([]float64, len(results))
			}
			given[i] = replyShare * max(0, r.Score-floor)
		}
	}
	if given == nil { // most searches: nothing to move, results in order
		return
	}
	bySession := map[string][]int{} // positions, by seq
	for i, r := range results {
		bySession[r.SessionID] = append(bySession[r.SessionID], i)
	}
	for _, at := range bySession {
		slices.SortFunc(at, func(a, b int) int { return cmp.Compare(results[a].Seq, results[b].Seq) })
	}
	for i, r := range results {
		if given[i] == 0 {
			continue
		}
		at := bySession[r.SessionID]
		next := slices.IndexFunc(at, func(j int) bool { return results[j].Seq > r.Seq })
		if next < 0 || results[at[next]].Seq > r.Seq+replyGap {
			continue
		}
		reply := &results[at[next]]
		reply.Score += given[i]
		reply.Signals = maps.Clone(reply.Signals)
		if reply.Signals == nil {
			reply.Signals = map[string]Signal{}
		}
		reply.Signals[SignalReply] = Signal{Rank: i + 1, Score: given[i]}
	}
	for i := range results {
		results[i].Score -= given[i]
	}
	sortResults(results)
}

// asksBriefly reports whether text is a short turn most of whose words
// are in questions.
func asksBriefly(text string) bool {
	words, asking, sentence := 0, 0, 0
	for w := range strings.FieldsSeq(text) { // lazily: a long turn stops at its 21st word
		words++
		if words > shortTurnWords {
			return false
		}
		sentence++
		w = strings.TrimRight(w, `"')]*`)
		switch {
		case strings.HasSuffix(strings.TrimRight(w, "!"), "?"): // "really?!" asks too
			asking += sentence
			sentence = 0
		case strings.HasSuffix(w, "."), strings.HasSuffix(w, "!"):
			sentence = 0
		}
	}
	return words > 0 && 2*asking >= words
}
