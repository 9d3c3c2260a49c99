package use

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The model file: a magic line; the vocabulary (a count, then per piece
// its score as float32 and its text, length-prefixed by a uint16); then
// the tensors in Tensors' order, each its dimension count, its dimensions
// (uint32) and its values as IEEE float16, all little-endian.
const modelMagic = "HECTOR-USE-1\n"

// Tensors are the network's weights, in the file's order, by the names
// the TF.js graph gives them (the converter reads them by these names).
var Tensors = []string{
	"module/Embeddings_en",
	"Encode/TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1",
	"Encode/Layer_0/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
	"Encode/Layer_0/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
	"module/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0",
	"Encode/Layer_0/TransformerLayer/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat",
	"module/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0",
	"Encode/Layer_0/TransformerLayer/MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat",
	"Encode/Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat",
	"Encode/Layer_0/TransformerLayer/dense/bias/ConcatPartitions/concat",
	"Encode/Layer_0/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
	"Encode/Layer_0/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
	"Encode/TransformerStack/Layer_0/TransformerLayer/FFN/conv1/Tensordot/Reshape_1",
	"Encode/Layer_0/TransformerLayer/FFN/conv1/bias/ConcatPartitions/concat",
	"Encode/TransformerStack/Layer_0/TransformerLayer/FFN/conv2/Tensordot/Reshape_1",
	"Encode/Layer_0/TransformerLayer/FFN/conv2/bias/ConcatPartitions/concat",
	"Encode/Layer_1/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
	"Encode/Layer_1/TransformerLayer/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
	"module/Encoder_en/KonaTransformer/Encode/Layer_1/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0",
	"Encode/Layer_1/TransformerLayer/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat",
	"module/Encoder_en/KonaTransformer/Encode/Layer_1/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0",
	"Encode/Layer_1/TransformerLayer/MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat",
	"Encode/Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
	"Encode/Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
	"Encode/TransformerStack/Layer_1/TransformerLayer/FFN/conv1/Tensordot/Reshape_1",
	"Encode/Layer_1/TransformerLayer/FFN/conv1/bias/ConcatPartitions/concat",
	"Encode/TransformerStack/Layer_1/TransformerLayer/FFN/conv2/Tensordot/Reshape_1",
	"Encode/Layer_1/TransformerLayer/FFN/conv2/bias/ConcatPartitions/concat",
	"module/Encoder_en/hidden_layers/tanh_layer_0/weights",
	"module/Encoder_en/hidden_layers/tanh_layer_0/bias",
}

// Piece is one vocabulary entry.
type Piece struct {
	Text  string
	Score float32
}

// Tensor is a weight: its shape and its values, row-major.
type Tensor struct {
	Shape []int
	Data  []float32
}

// WriteModel encodes a vocabulary and the tensors (in Tensors' order) as
// a model file, the values rounded to float16.
func WriteModel(vocab []Piece, tensors []Tensor) ([]byte, error) {
	if len(tensors) != len(Tensors) {
		return nil, fmt.Errorf("use: %d tensors, want %d", len(tensors), len(Tensors))
	}
	buf := []byte(modelMagic)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(vocab)))
	for _, p := range vocab {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(p.Score))
		buf = binary.LittleEndian.AppendUint16(buf, uint16(len(p.Text)))
		buf = append(buf, p.Text...)
	}
	for _, t := range tensors {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(t.Shape)))
		for _, d := range t.Shape {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(d))
		}
		for _, x := range t.Data {
			buf = binary.LittleEndian.AppendUint16(buf, toHalf(x))
		}
	}
	return buf, nil
}

// readModel decodes a model file.
func readModel(raw []byte) ([]Piece, []Tensor, error) {
	body, ok := bytes.CutPrefix(raw, []byte(modelMagic))
	if !ok {
		return nil, nil, errors.New("use: not a model file")
	}
	r := reader{b: body}
	vocab := make([]Piece, r.u32())
	for i := range vocab {
		score := math.Float32frombits(r.u32())
		vocab[i] = Piece{Text: string(r.bytes(int(r.u16()))), Score: score}
	}
	tensors := make([]Tensor, len(Tensors))
	for i := range tensors {
		n := int(r.u32())
		size := 1
		for range n {
			d := int(r.u32())
			tensors[i].Shape = append(tensors[i].Shape, d)
			size *= d
		}
		halves := r.bytes(2 * size)
		if r.err != nil {
			break
		}
		tensors[i].Data = make([]float32, size)
		for j := range size {
			tensors[i].Data[j] = fromHalf(binary.LittleEndian.Uint16(halves[2*j:]))
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, nil, errors.New("use: the model file is damaged")
	}
	return vocab, tensors, nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n > len(r.b) {
		r.err = errors.New("short")
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.bytes(4)) }
func (r *reader) u16() uint16 { return binary.LittleEndian.Uint16(r.bytes(2)) }

// toHalf rounds a float32 to IEEE float16 (to nearest even), with
// overflow to infinity and underflow through subnormals to zero.
func toHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case (b>>23)&0xff == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		if mid := uint32(1) << (shift - 1); rem > mid || rem == mid && half&1 == 1 {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || rem == 0x1000 && half&1 == 1 {
		half++ // may carry into the exponent, which is right
	}
	return sign | uint16(half)
}

// fromHalf widens an IEEE float16 to float32.
func fromHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := int(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		exp = 1
		for mant&0x400 == 0 { // subnormal: normalise
			mant <<= 1
			exp--
		}
		mant &= 0x3ff
	}
	return math.Float32frombits(sign | uint32(exp+127-15)<<23 | mant<<13)
}
