package index

import (
	"math"

	"github.com/hectormem/hector/pkg/session"
)

// What the user said comes first: an assistant's reply ranks below the
// user's message it answers, when both are found, unless the reply's own
// words match the query better (a higher keyword score). A reply's vector
// carries the end of the message it answers (see befores), and an
// assistant restates what it answers ("Congratulations on Max, your new
// Golden Retriever!"), so a hybrid search ranked the reply in the place of
// the turn whose words it borrowed: on LongMemEval's development half, in 6
// of the 8 questions keyword search answered first and the hybrid did not.
// With this, hit@1 there rose from 0.525 to 0.574 (keyword search 0.535),
// the sessions found did not move, nor did the questions whose answer is
// the assistant's (0.833; without the keyword test, 0). A turn moves only
// above its own session's next turn, so which sessions are found, and in
// what order, never changes. LoCoMo and the first-hour set have no
// assistant; their figures did not move.
func userFirst(results []SearchResult) {
	type turn struct {
		session string
		seq     int64
	}
	var at map[turn]int // the user's messages among the results; nil while there is none
	for i, r := range results {
		if r.Role == session.RoleUser {
			if at == nil {
				at = map[turn]int{}
			}
			at[turn{r.SessionID, r.Seq}] = i
		}
	}
	moved := false
	for _, reply := range results {
		if reply.Role != session.RoleAssistant {
			continue
		}
		j, ok := at[turn{reply.SessionID, reply.Seq - 1}]
		if !ok || results[j].Score > reply.Score || signalScore(reply, KindKeyword) > signalScore(results[j], KindKeyword) {
			continue
		}
		results[j].Score = math.Nextafter(reply.Score, math.Inf(1)) // just above the reply: a later sort keeps it there
		moved = true
	}
	if moved {
		sortResults(results)
	}
}

// assistantShare is the share of its score an assistant's turn keeps.
const assistantShare = 0.85

// What the user said counts more than what an assistant said back. An
// assistant restates what it is told, at length ("Your mixed ethnicity is a
// wonderful blend…"), and its long replies hold a question's words and
// meaning by chance more often than a person's turns: userFirst puts the
// user's message above the reply right after it, and this reaches the rest,
// a restatement turns later and the replies of sessions about something
// else. An assistant's turn keeps assistantShare of its score, so it still
// comes first where nothing the user said matches as well: a question
// about what the assistant said. On LongMemEval's development half (101
// questions), recall_all@5 / ndcg_any@5 / hit@1 went from 0.941 / 0.950 /
// 0.564 to 0.960 / 0.943 / 0.644 with e5's 8-bit arithmetic (VNNI), from
// 0.941 / 0.946 / 0.564 to 0.950 / 0.940 / 0.644 with its 16-bit (AVX2);
// keyword search makes 0.861 / 0.880 / 0.535. The questions whose answer
// is the assistant's (12) kept 0.833 and 1.000. 0.9 gave hit@1 0.614 and
// 0.634; 0.8 the same as 0.85 on VNNI, but on AVX2 recall_all@5 0.941 and a
// preference question's session out of the first five; 0.6 took the
// assistant's answers' hit@1 to 0.583. LoCoMo and the first-hour set have
// no assistant; they did not move.
func countAssistantsLess(results []SearchResult) {
	found := false
	for i := range results {
		if results[i].Role == session.RoleAssistant {
			results[i].Score *= assistantShare
			found = true
		}
	}
	if found {
		sortResults(results)
	}
}

// signalScore is what one search of a hybrid index scored a result; 0 when
// that search did not find it.
func signalScore(r SearchResult, kind Kind) float64 {
	return r.Signals[string(kind)].Score
}
