package eval

import (
	"math"
	"slices"
)

// Hit is one search result: the event it found and the session it is in.
type Hit struct{ EventID, SessionID string }

// score computes a question's figures from its results, best first: the
// turn-level ones for Hector's format and LoCoMo, LongMemEval's own
// otherwise. A figure the question has no evidence for is left out.
func score(metrics []string, q Question, hits []Hit) map[string]float64 {
	out := map[string]float64{}
	turns := setOf(q.Turns)
	ranked := make([]string, len(hits))
	for i, h := range hits {
		ranked[i] = h.EventID
	}
	if slices.Equal(metrics, SessionMetrics) {
		sessions := sessionRanking(hits)
		answers := setOf(q.Sessions)
		out["recall_all@5"] = RecallAll(sessions, answers, 5)
		out["recall_all@10"] = RecallAll(sessions, answers, 10)
		out["ndcg_any@5"] = NDCG(sessions, answers, 5)
		out["ndcg_any@10"] = NDCG(sessions, answers, 10)
		if len(turns) > 0 {
			out["hit@1"] = RecallAny(ranked, turns, 1)
			out["recall_any@5"] = RecallAny(ranked, turns, 5)
			out["recall_any@10"] = RecallAny(ranked, turns, 10)
		}
		return out
	}
	out["hit@1"] = RecallAny(ranked, turns, 1)
	out["recall@5"] = Recall(ranked, turns, 5)
	out["recall@10"] = Recall(ranked, turns, 10)
	out["mrr@10"] = MRR(ranked, turns, 10)
	out["ndcg@5"] = NDCG(ranked, turns, 5)
	return out
}

// sessionRanking ranks sessions by their best turn among the results.
func sessionRanking(hits []Hit) []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range hits {
		if !seen[h.SessionID] {
			seen[h.SessionID] = true
			out = append(out, h.SessionID)
		}
	}
	return out
}

func setOf(ids []string) map[string]bool {
	s := make(map[string]bool, len(ids))
	for _, id := range ids {
		s[id] = true
	}
	return s
}

// Recall is the share of the relevant items within the first k.
func Recall(ranked []string, relevant map[string]bool, k int) float64 {
	if len(relevant) == 0 {
		return 0
	}
	found := 0
	for _, id := range ranked[:min(k, len(ranked))] {
		if relevant[id] {
			found++
		}
	}
	return float64(found) / float64(len(relevant))
}

// RecallAny is 1 when a relevant item is within the first k, else 0 (at
// k = 1, the hit rate).
func RecallAny(ranked []string, relevant map[string]bool, k int) float64 {
	for _, id := range ranked[:min(k, len(ranked))] {
		if relevant[id] {
			return 1
		}
	}
	return 0
}

// RecallAll is 1 when every relevant item is within the first k, else 0.
func RecallAll(ranked []string, relevant map[string]bool, k int) float64 {
	if Recall(ranked, relevant, k) == 1 {
		return 1
	}
	return 0
}

// MRR is the reciprocal rank of the first relevant item within the first
// k, 0 when there is none.
func MRR(ranked []string, relevant map[string]bool, k int) float64 {
	for i, id := range ranked[:min(k, len(ranked))] {
		if relevant[id] {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// NDCG is the normalised discounted cumulative gain at k with every
// relevant item of gain 1: the ranking's DCG over the best one's, which
// puts min(k, relevant) relevant items first.
func NDCG(ranked []string, relevant map[string]bool, k int) float64 {
	var dcg, ideal float64
	for i, id := range ranked[:min(k, len(ranked))] {
		if relevant[id] {
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	for i := range min(k, len(relevant)) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}
