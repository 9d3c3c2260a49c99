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
	out := fuse(keyword, vector, func(SearchResult) float64 { return 1 }, 10)
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

// A keyword result that holds the whole query outweighs the vector's
// best; one that holds only a name, common to many of a person's turns,
// gives way to the vector's.
func TestFuseWeighsKeywordsByCoverage(t *testing.T) {
	vector := []SearchResult{{SessionID: "s", EventID: "meaning", Score: 0.8}, {SessionID: "s", EventID: "words", Score: 0.4}}
	full := []SearchResult{{SessionID: "s", EventID: "words", Score: 9}, {SessionID: "s", EventID: "meaning", Score: 1}}
	coverage := map[string]float64{"words": 1, "meaning": 0.25}
	out := fuse(full, vector, func(r SearchResult) float64 { return coverage[r.EventID] }, 2)
	if out[0].EventID != "words" {
		t.Errorf("a keyword result holding every query term came after %q", out[0].EventID)
	}
	nameOnly := []SearchResult{{SessionID: "s", EventID: "chatter", Score: 2}, {SessionID: "s", EventID: "small talk", Score: 2}}
	coverage = map[string]float64{"chatter": 0.34, "small talk": 0.34}
	out = fuse(nameOnly, vector, func(r SearchResult) float64 { return coverage[r.EventID] }, 3)
	if out[0].EventID != "meaning" {
		t.Errorf("keyword results holding only a name ranked %q over the vector's best", out[0].EventID)
	}
}
