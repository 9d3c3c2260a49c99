package index

import (
	"testing"
)

// fuse reads the lists it is given and writes only its own results: the
// lists' results keep their scores and the caller's metadata as they were,
// and each fused result says which signal found it, at which rank and
// score.
func TestFuseLeavesItsInputsAlone(t *testing.T) {
	shared := map[string]any{"tag": "the caller's"}
	keyword := []SearchResult{{SessionID: "s", EventID: "a", Score: 3, Metadata: shared}, {SessionID: "s", EventID: "b", Score: 2}}
	vector := []SearchResult{{SessionID: "s", EventID: "b", Score: 0.9}, {SessionID: "s", EventID: "c", Score: 0.5, Metadata: shared}}
	out := fuse(map[string][]SearchResult{"keyword": keyword, "vector": vector}, 10)
	if len(out) != 3 || out[0].EventID != "b" {
		t.Fatalf("fused %+v, want b (found by both) first of three", out)
	}
	if len(shared) != 1 || keyword[1].Signals != nil || vector[0].Signals != nil || keyword[0].Score != 3 {
		t.Errorf("fuse changed its inputs: %v %+v %+v", shared, keyword, vector)
	}
	if s := out[0].Signals; s["keyword"] != (Signal{Rank: 2, Score: 2}) || s["vector"] != (Signal{Rank: 1, Score: 0.9}) {
		t.Errorf("b's signals %+v, want keyword rank 2 (score 2) and vector rank 1 (score 0.9)", s)
	}
	for _, r := range out {
		if r.EventID != "b" && len(r.Signals) != 1 {
			t.Errorf("%s's signals %+v, want the one that found it", r.EventID, r.Signals)
		}
	}
}
