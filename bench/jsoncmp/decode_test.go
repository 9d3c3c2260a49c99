// Package jsoncmp measures JSON decoders the Go ecosystem trusts on the
// payloads Hector stores for events, to choose the one a session Get uses.
// It is a module of its own so that the candidates never become
// dependencies of Hector:
//
//	cd bench/jsoncmp && go test -bench . -benchmem -count 6 | tee /tmp/jsoncmp.txt
package jsoncmp

import (
	stdjson "encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/bytedance/sonic"
	jsonv2 "github.com/go-json-experiment/json"
	goccy "github.com/goccy/go-json"
	jsoniter "github.com/json-iterator/go"
	segment "github.com/segmentio/encoding/json"

	"github.com/hectormem/hector/pkg/session"
)

// payload has the shape of the JSON part of a stored event.
type payload struct {
	Message  *session.Message `json:"message,omitempty"`
	Actions  session.Actions  `json:"actions"`
	Metadata map[string]any   `json:"metadata,omitempty"`
}

// payloads are what a session's events typically hold: a user's text, a
// model's tool call, a tool's structured result, an answer with metadata.
var payloads = func() [][]byte {
	events := []payload{
		{Message: session.NewTextMessage(session.RoleUser, "message 17: what is the weather like in Paris today? I fly out on Thursday morning."),
			Actions: session.Actions{StateDelta: map[string]any{"user:last": 17}}},
		{Message: &session.Message{Role: session.RoleAssistant, Parts: []session.Part{{Type: session.PartToolCall,
			ToolCall: &session.ToolCall{ID: "call-1", Name: "weather", Arguments: map[string]any{"city": "Paris", "days": 3, "units": "metric"}}}}}},
		{Message: &session.Message{Role: session.RoleTool, Parts: []session.Part{{Type: session.PartToolResult,
			ToolResult: &session.ToolResult{CallID: "call-1", Name: "weather", Content: map[string]any{
				"forecast": []any{map[string]any{"day": "Thu", "high_c": 18.5, "low_c": 9.0, "sky": "cloudy"},
					map[string]any{"day": "Fri", "high_c": 21.0, "low_c": 11.5, "sky": "sunny"}}}}}}}},
		{Message: session.NewTextMessage(session.RoleAssistant, "Thursday will be cloudy, 9 to 18.5 °C; Friday sunny and warmer. Pack a light jacket."),
			Actions: session.Actions{StateDelta: map[string]any{"trip_city": "Paris"}}, Metadata: map[string]any{"model": "m1", "tokens": 42}},
	}
	var out [][]byte
	for _, e := range events {
		b, err := stdjson.Marshal(e)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}()

var decoders = []struct {
	name      string
	unmarshal func([]byte, any) error
}{
	{"encoding-json", stdjson.Unmarshal},
	{"json-v2-experiment", func(b []byte, v any) error { return jsonv2.Unmarshal(b, v) }},
	{"segmentio", segment.Unmarshal},
	{"goccy", goccy.Unmarshal},
	{"jsoniter", jsoniter.ConfigCompatibleWithStandardLibrary.Unmarshal},
	{"sonic-std", sonic.ConfigStd.Unmarshal},
}

// TestSameResult: a decoder is a candidate only if it decodes every payload
// to exactly what encoding/json does.
func TestSameResult(t *testing.T) {
	for _, p := range payloads {
		var want payload
		if err := stdjson.Unmarshal(p, &want); err != nil {
			t.Fatal(err)
		}
		for _, d := range decoders[1:] {
			var got payload
			if err := d.unmarshal(p, &got); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s on %s: %+v, %v", d.name, p, got, err)
			}
		}
	}
}

// BenchmarkDecode decodes 100 events, as a Get of the last 100 does.
func BenchmarkDecode(b *testing.B) {
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			for b.Loop() {
				for i := range 100 {
					var p payload
					if err := d.unmarshal(payloads[i%len(payloads)], &p); err != nil {
						b.Fatal(fmt.Errorf("%s: %w", d.name, err))
					}
				}
			}
		})
	}
}
