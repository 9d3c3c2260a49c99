package state

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/hectormem/hector/internal/jsondepth"
)

// DefaultMaxValueBytes is the largest JSON encoding of one value accepted
// when no other limit is configured.
const DefaultMaxValueBytes = 256 << 10

// MaxDepth bounds how deeply a value's objects and arrays nest.
const MaxDepth = 32

// Normalize checks that value can be stored and returns it in the form every
// backend gives back: the result of a JSON round trip (objects become
// map[string]any, arrays []any, numbers float64). Channels, functions,
// NaN, ±Inf, nesting deeper than MaxDepth and encodings over maxBytes are rejected with an error wrapping
// ErrInvalidValue. maxBytes <= 0 means DefaultMaxValueBytes.
//
// Normalizing on write is what makes the in-memory backend behave exactly
// like the SQL one, and what guarantees a stored value can be read back.
func Normalize(key string, value any, maxBytes int) (any, error) {
	raw, err := Encode(key, value, maxBytes)
	if err != nil {
		return nil, err
	}
	return Decode(raw)
}

// Encode validates value like Normalize and returns its JSON encoding.
func Encode(key string, value any, maxBytes int) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxValueBytes
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, &valueErr{key: key, problem: fmt.Sprintf("cannot be stored as JSON (%v)", err)}
	}
	if len(raw) > maxBytes {
		return nil, &valueErr{key: key, problem: fmt.Sprintf("is %d bytes as JSON, over the limit of %d", len(raw), maxBytes)}
	}
	if jsondepth.Exceeds(raw, MaxDepth) {
		return nil, &valueErr{key: key, problem: fmt.Sprintf("nests objects and arrays more than %d deep", MaxDepth)}
	}
	return raw, nil
}

// Decode turns a stored JSON encoding back into a value.
func Decode(raw []byte) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("decoding stored state value: %w", err)
	}
	return v, nil
}

type valueErr struct{ key, problem string }

func (e *valueErr) Error() string { return "value of state key " + quote(e.key) + " " + e.problem }
func (e *valueErr) Unwrap() error { return ErrInvalidValue }

// Clone deep-copies a normalized value, so a caller that mutates what it was
// given cannot change what is stored.
func Clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		// maps.Clone copies the table in bulk, far cheaper than inserting
		// key by key; only nested containers need copies of their own.
		out := maps.Clone(v)
		for k, e := range out {
			switch e.(type) {
			case map[string]any, []any:
				out[k] = Clone(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = Clone(e)
		}
		return out
	default:
		return v
	}
}

// CloneMap deep-copies a map of normalized values; nil stays nil.
func CloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return Clone(m).(map[string]any)
}
