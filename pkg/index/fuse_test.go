package index

import (
	"testing"
)

// fuse reads the lists it is given and writes only its own results: a
// store's result without metadata does not panic it, and the lists'
// results keep their metadata as they were.
func TestFuseLeavesItsInputsAlone(t *testing.T) {
	shared := map[string]any{"role": "user"}
	keyword := []SearchResult{{SessionID: "s", EventID: "a", Score: 3, Metadata: shared}, {SessionID: "s", EventID: "b", Score: 2}}
	vector := []SearchResult{{SessionID: "s", EventID: "b", Score: 0.9}, {SessionID: "s", EventID: "c", Score: 0.5, Metadata: shared}}
	out := fuse(map[string][]SearchResult{"keyword": keyword, "vector": vector}, 10)
	if len(out) != 3 || out[0].EventID != "b" {
		t.Fatalf("fused %+v, want b (found by both) first of three", out)
	}
	if _, ok := shared["signals"]; ok || len(shared) != 1 {
		t.Errorf("fuse wrote into a result's metadata: %v", shared)
	}
	if keyword[1].Metadata != nil || vector[0].Metadata != nil || keyword[0].Score != 3 {
		t.Errorf("fuse changed its inputs: %+v %+v", keyword, vector)
	}
	signals := out[0].Metadata["signals"].(map[string]int)
	if signals["keyword"] != 2 || signals["vector"] != 1 {
		t.Errorf("b's signals %v, want keyword rank 2 and vector rank 1", signals)
	}
}
