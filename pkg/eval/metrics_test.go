package eval

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Each metric against a ranking worked out by hand.
func TestMetricsByHand(t *testing.T) {
	ranked := []string{"a", "x", "b", "y", "z", "c"}
	rel := setOf([]string{"b", "c", "d"}) // d is never found
	l2 := math.Log2
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"recall@5: b of b, c, d", Recall(ranked, rel, 5), 1.0 / 3},
		{"recall@10: b and c", Recall(ranked, rel, 10), 2.0 / 3},
		{"recall over a short list", Recall(ranked[:2], rel, 10), 0},
		{"hit@1: a is not relevant", RecallAny(ranked, rel, 1), 0},
		{"recall_any@3: b at 3", RecallAny(ranked, rel, 3), 1},
		{"recall_all@10: d missing", RecallAll(ranked, rel, 10), 0},
		{"recall_all@6 of b, c", RecallAll(ranked, setOf([]string{"b", "c"}), 6), 1},
		{"recall_all@5 of b, c: c is 6th", RecallAll(ranked, setOf([]string{"b", "c"}), 5), 0},
		{"mrr@10: first relevant at 3", MRR(ranked, rel, 10), 1.0 / 3},
		{"mrr@2: none within 2", MRR(ranked, rel, 2), 0},
		// DCG@5 = 1/log2(4) (b at 3); ideal = 1/log2(2) + 1/log2(3) + 1/log2(4) (three relevant)
		{"ndcg@5", NDCG(ranked, rel, 5), (1 / l2(4)) / (1/l2(2) + 1/l2(3) + 1/l2(4))},
		// DCG@10 adds c at 6: 1/log2(7)
		{"ndcg@10", NDCG(ranked, rel, 10), (1/l2(4) + 1/l2(7)) / (1/l2(2) + 1/l2(3) + 1/l2(4))},
		{"ndcg with nothing relevant", NDCG(ranked, setOf(nil), 5), 0},
		{"ndcg of a perfect ranking", NDCG([]string{"b", "c"}, setOf([]string{"b", "c"}), 5), 1},
	} {
		if !near(tc.got, tc.want) {
			t.Errorf("%s = %.6f, want %.6f", tc.name, tc.got, tc.want)
		}
	}
}

// LongMemEval ranks sessions by their best turn: recall_all asks for
// every answer session, ndcg_any counts each as relevant, and the
// turn-level figures look at has_answer turns.
func TestLongMemEvalScoresSessionsByTheirBestTurn(t *testing.T) {
	q := Question{Sessions: []string{"s2", "s4"}, Turns: []string{"s2:3"}}
	hits := []Hit{{"s1:1", "s1"}, {"s2:1", "s2"}, {"s1:2", "s1"}, {"s3:1", "s3"}, {"s2:3", "s2"}, {"s5:1", "s5"}, {"s6:1", "s6"}, {"s4:1", "s4"}}
	// Sessions in order: s1, s2, s3, s5, s6, s4.
	got := score(SessionMetrics, q, hits)
	l2 := math.Log2
	want := map[string]float64{
		"recall_all@5": 0, "recall_all@10": 1,
		"ndcg_any@5":  (1 / l2(3)) / (1/l2(2) + 1/l2(3)),
		"ndcg_any@10": (1/l2(3) + 1/l2(7)) / (1/l2(2) + 1/l2(3)),
		"hit@1":       0, "recall_any@5": 1, "recall_any@10": 1,
	}
	for k, v := range want {
		if !near(got[k], v) {
			t.Errorf("%s = %.6f, want %.6f", k, got[k], v)
		}
	}
	// No has_answer turn: the turn-level figures are left out, not zero.
	got = score(SessionMetrics, Question{Sessions: []string{"s2"}}, hits)
	if _, ok := got["hit@1"]; ok || got["recall_all@5"] != 1 {
		t.Errorf("without has_answer turns: %v", got)
	}
}

// Overall figures leave out the questions reported apart; each category
// has its own, and a metric a question lacks does not count as a zero.
func TestAggregate(t *testing.T) {
	d := &Dataset{Questions: []Question{{Category: "b"}, {Category: "a"}, {Category: "a"}, {Category: "z", Apart: true}}}
	overall, cats := aggregate(d, []map[string]float64{{"m": 1, "n": 1}, {"m": 0}, {"m": 1}, {"m": 0, "n": 0}})
	if overall.Questions != 3 || !near(overall.Values["m"], 2.0/3) || overall.Values["n"] != 1 {
		t.Errorf("overall = %+v", overall)
	}
	if len(cats) != 3 || cats[0].Name != "a" || cats[0].Values["m"] != 0.5 || cats[1].Name != "b" || cats[2].Name != "z" || !cats[2].Apart {
		t.Errorf("categories = %+v", cats)
	}
}
