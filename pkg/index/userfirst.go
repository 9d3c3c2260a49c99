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
	for i := 0; i < len(results); i++ {
		reply := results[i]
		if reply.Role != session.RoleAssistant {
			continue
		}
		for j := i + 1; j < len(results); j++ {
			asked := results[j]
			if asked.SessionID != reply.SessionID || asked.Seq != reply.Seq-1 {
				continue
			}
			if asked.Role == session.RoleUser && signalScore(reply, KindKeyword) <= signalScore(asked, KindKeyword) {
				asked.Score = math.Nextafter(reply.Score, math.Inf(1)) // so that a later sort keeps it there
				copy(results[i+1:j+1], results[i:j])
				results[i] = asked
			}
			break
		}
	}
}

// signalScore is what one search of a hybrid index scored a result; 0 when
// that search did not find it.
func signalScore(r SearchResult, kind Kind) float64 {
	return r.Signals[string(kind)].Score
}
