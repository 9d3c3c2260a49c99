package session

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// FuzzPayloadDecode: stored payloads are written by encoding/json and read
// by go-json-experiment/json; whatever an event holds, the reader must see
// exactly what encoding/json would decode.
func FuzzPayloadDecode(f *testing.F) {
	f.Add("hello", "user:lang", `{"city":"Paris","days":3}`, 18.5, []byte{1, 2})
	f.Add("caf\xe9 \u2028 <b>", "k\x00", `[1,"two",null,{"x":[true]}]`, math.Copysign(0, -1), []byte(nil))
	f.Add("", "", `"just a string"`, 1e300, []byte{})
	f.Fuzz(func(t *testing.T, text, key, rawJSON string, num float64, data []byte) {
		var arg any
		if json.Unmarshal([]byte(rawJSON), &arg) != nil {
			arg = rawJSON
		}
		ev := eventPayload{
			InvocationID: key, Author: text, Branch: rawJSON,
			Message: &Message{Role: text, Parts: []Part{
				{Type: PartText, Text: text},
				{Type: PartToolCall, ToolCall: &ToolCall{ID: key, Name: text, Arguments: map[string]any{key: arg, "n": num}}},
				{Type: PartToolResult, ToolResult: &ToolResult{CallID: key, Content: arg}},
				{Type: PartFile, File: &File{Name: key, Data: data}},
				{Type: PartData, Data: map[string]any{text: []any{arg, num}}},
			}},
			Actions:  Actions{StateDelta: map[string]any{key: arg}, ArtifactDelta: map[string]int64{text: int64(num)}, Summary: &SummaryRange{1, 2}},
			Metadata: map[string]any{"m": arg},
		}
		payload, err := json.Marshal(ev)
		if err != nil {
			return // prepareAppend refuses what cannot be stored (NaN, say)
		}
		var want eventPayload
		if err := json.Unmarshal(payload, &want); err != nil {
			t.Fatalf("encoding/json cannot read its own %s: %v", payload, err)
		}
		row := eventRow{Payload: longText(payload)}
		got, err := row.event()
		if err != nil {
			t.Fatalf("reading %s: %v", payload, err)
		}
		if got.InvocationID != want.InvocationID || got.Author != want.Author || got.Branch != want.Branch {
			t.Errorf("payload %s read as invocation %q author %q branch %q", payload, got.InvocationID, got.Author, got.Branch)
		}
		if !reflect.DeepEqual(got.Message, want.Message) || !reflect.DeepEqual(got.Actions, want.Actions) || !reflect.DeepEqual(got.Metadata, want.Metadata) {
			t.Errorf("payload %s\nread as %+v %+v %+v\nencoding/json reads %+v %+v %+v", payload, got.Message, got.Actions, got.Metadata, want.Message, want.Actions, want.Metadata)
		}

		// A payload stored before the invocation ID, author and branch
		// moved into it becomes, moved, what encoding/json writes today.
		old := ev
		old.InvocationID, old.Author, old.Branch = "", "", ""
		oldPayload, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		moved, err := withMovedFields(string(oldPayload), key, text, rawJSON)
		if err != nil || moved != string(payload) {
			t.Errorf("moving fields into %s gave %s, %v; want %s", oldPayload, moved, err, payload)
		}
	})
}
