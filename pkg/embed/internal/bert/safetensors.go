package bert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// tensor is one of the model's weights, as float32.
type tensor struct {
	shape []int
	data  []float32
}

// readSafetensors reads a safetensors file (an 8-byte little-endian header
// length, a JSON header naming each tensor's type, shape and byte range,
// then the data) of F16 or F32 tensors, and of I8 ones, each stored with
// an F32 scale for every group of a row's values (its name + ".scale",
// [rows, groups]), widened to float32.
func readSafetensors(raw []byte) (map[string]tensor, error) {
	if len(raw) < 8 {
		return nil, fmt.Errorf("the model file is %d bytes", len(raw))
	}
	n := binary.LittleEndian.Uint64(raw)
	if n > uint64(len(raw)-8) {
		return nil, fmt.Errorf("the model file's header runs past its end")
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &header); err != nil {
		return nil, fmt.Errorf("the model file's header: %w", err)
	}
	data := raw[8+n:]
	out := map[string]tensor{}
	quantized := map[string][]int8{}
	for name, h := range header {
		if strings.HasPrefix(name, "__") {
			continue // __metadata__
		}
		var info struct {
			Dtype   string    `json:"dtype"`
			Shape   []int     `json:"shape"`
			Offsets [2]uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(h, &info); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		size := 1
		for _, d := range info.Shape {
			size *= d
		}
		from, to := info.Offsets[0], info.Offsets[1]
		if from > to || to > uint64(len(data)) {
			return nil, fmt.Errorf("tensor %s lies outside the file", name)
		}
		b := data[from:to]
		t := tensor{shape: info.Shape, data: make([]float32, size)}
		switch {
		case info.Dtype == "F16" && len(b) == 2*size:
			for i := range t.data {
				t.data[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
			}
		case info.Dtype == "F32" && len(b) == 4*size:
			for i := range t.data {
				t.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
		case info.Dtype == "I8" && len(b) == size && len(info.Shape) == 2:
			q := make([]int8, size)
			for i, v := range b {
				q[i] = int8(v)
			}
			quantized[name] = q
		default:
			return nil, fmt.Errorf("tensor %s is %d bytes of %s for %d values: want F16, F32 or I8 (rows)", name, len(b), info.Dtype, size)
		}
		out[name] = t
	}
	for name, q := range quantized {
		scale, ok := out[name+".scale"]
		t := out[name]
		rows, cols := t.shape[0], t.shape[1]
		if !ok || len(scale.shape) != 2 || scale.shape[0] != rows || scale.shape[1] == 0 || cols%scale.shape[1] != 0 {
			return nil, fmt.Errorf("tensor %s is int8 without a scale for each group of each of its %d rows", name, rows)
		}
		group := cols / scale.shape[1]
		for i, v := range q {
			t.data[i] = float32(v) * scale.data[i/group]
		}
		delete(out, name+".scale")
	}
	return out, nil
}

// halfToFloat widens an IEEE 754 half-precision number.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise it
		for frac&0x400 == 0 {
			frac <<= 1
			exp--
		}
		exp++
		frac &= 0x3ff
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}
