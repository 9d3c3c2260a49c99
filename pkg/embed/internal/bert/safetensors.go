package bert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// tensor is one of the model's weights: float32, or int8 with a scale for
// every group of a row's values, as the file keeps it.
type tensor struct {
	shape []int
	data  []float32 // nil when q holds the values
	q     []int8
	scale []float32 // q's, one for every group values
	group int
}

// floats is the tensor in float32.
func (t tensor) floats() []float32 {
	if t.q == nil {
		return t.data
	}
	out := make([]float32, len(t.q))
	for i, v := range t.q {
		out[i] = float32(v) * t.scale[i/t.group]
	}
	return out
}

// row writes row i of a two-dimensional tensor to dst, in float32.
func (t tensor) row(i int, dst []float32) {
	width := t.shape[1]
	if t.q == nil {
		copy(dst, t.data[i*width:][:width])
		return
	}
	scale := t.scale[i*width/t.group:]
	for j, v := range t.q[i*width:][:width] {
		dst[j] = float32(v) * scale[j/t.group]
	}
}

// readSafetensors reads a safetensors file (an 8-byte little-endian header
// length, a JSON header naming each tensor's type, shape and byte range,
// then the data) of F16 or F32 tensors, widened to float32, and of I8
// ones, each stored with an F32 scale for every group of a row's values
// (its name + ".scale", [rows, groups]), kept so.
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
		t := tensor{shape: info.Shape}
		switch {
		case info.Dtype == "F16" && len(b) == 2*size:
			t.data = make([]float32, size)
			for i := range t.data {
				t.data[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
			}
		case info.Dtype == "F32" && len(b) == 4*size:
			t.data = make([]float32, size)
			for i := range t.data {
				t.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
		case info.Dtype == "I8" && len(b) == size && len(info.Shape) == 2:
			t.q = make([]int8, size)
			for i, v := range b {
				t.q[i] = int8(v)
			}
		default:
			return nil, fmt.Errorf("tensor %s is %d bytes of %s for %d values: want F16, F32 or I8 (rows)", name, len(b), info.Dtype, size)
		}
		out[name] = t
	}
	for name, t := range out {
		if t.q == nil {
			continue
		}
		scale, ok := out[name+".scale"]
		rows, cols := t.shape[0], t.shape[1]
		if !ok || scale.q != nil || len(scale.shape) != 2 || scale.shape[0] != rows || scale.shape[1] == 0 || cols%scale.shape[1] != 0 {
			return nil, fmt.Errorf("tensor %s is int8 without a scale for each group of each of its %d rows", name, rows)
		}
		t.scale, t.group = scale.data, cols/scale.shape[1]
		out[name] = t
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
