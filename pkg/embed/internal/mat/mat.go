// Package mat is the dense arithmetic the built-in encoders share:
// row-major float32 matrices, their products (Linear: an AVX2 kernel of
// Hector's own where the processor has it, gonum's BLAS elsewhere; int8
// weights on AVX-512 VNNI where a model allows it), layer normalisation,
// softmax and GELU.
package mat

import (
	"math"

	"gonum.org/v1/gonum/blas/blas32"
)

// Matrix is row-major: Rows × Cols values in Data.
type Matrix struct {
	Rows, Cols int
	Data       []float32
}

// New is a zero matrix.
func New(rows, cols int) Matrix {
	return Matrix{Rows: rows, Cols: cols, Data: make([]float32, rows*cols)}
}

// Row is row i, shared with the matrix.
func (m Matrix) Row(i int) []float32 { return m.Data[i*m.Cols : (i+1)*m.Cols] }

// Slice is a view of rows from to to (not included).
func (m Matrix) Slice(from, to int) Matrix {
	return Matrix{Rows: to - from, Cols: m.Cols, Data: m.Data[from*m.Cols : to*m.Cols]}
}

// General is the matrix as BLAS takes it.
func (m Matrix) General() blas32.General {
	return blas32.General{Rows: m.Rows, Cols: m.Cols, Stride: m.Cols, Data: m.Data}
}

// Columns is a view of n columns from first.
func (m Matrix) Columns(first, n int) blas32.General {
	return blas32.General{Rows: m.Rows, Cols: n, Stride: m.Cols, Data: m.Data[first : (m.Rows-1)*m.Cols+first+n]}
}

// Reuse returns a rows × cols matrix over *buf, enlarging *buf when it
// holds fewer values; the matrix holds whatever *buf did (see Into).
func Reuse(buf *[]float32, rows, cols int) Matrix {
	return Matrix{Rows: rows, Cols: cols, Data: grow(buf, rows*cols)}
}

// grow returns (*buf)[:n], enlarging *buf when it holds fewer.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	return (*buf)[:n]
}

// Add adds other to m, value by value.
func (m Matrix) Add(other Matrix) {
	for i, v := range other.Data {
		m.Data[i] += v
	}
}

// LayerNorm writes into dst (which may be src) each row of src scaled to
// mean 0 and variance 1 (plus eps), then by scale and bias. The sums run
// in four independent lanes: one chain of additions waits on each add in
// turn, which made layer norms a tenth of a short query's embedding. With
// the kernel, rows of a multiple of 8 go through the vector instructions
// (layerNorm8), which compute the same values to the bit.
func LayerNorm(dst, src Matrix, scale, bias []float32, eps float64) {
	if Kernel && src.Cols%8 == 0 && src.Cols > 0 {
		_, _ = scale[src.Cols-1], bias[src.Cols-1]
		for i := range src.Rows {
			layerNorm8(&dst.Row(i)[0], &src.Row(i)[0], &scale[0], &bias[0], src.Cols, eps)
		}
		return
	}
	for i := range src.Rows {
		x, y := src.Row(i), dst.Row(i)
		n := len(x) / 4 * 4
		var s0, s1, s2, s3 float64
		for j := 0; j < n; j += 4 {
			s0, s1, s2, s3 = s0+float64(x[j]), s1+float64(x[j+1]), s2+float64(x[j+2]), s3+float64(x[j+3])
		}
		for _, v := range x[n:] {
			s0 += float64(v)
		}
		mean := ((s0 + s1) + (s2 + s3)) / float64(len(x))
		s0, s1, s2, s3 = 0, 0, 0, 0
		for j := 0; j < n; j += 4 {
			d0, d1, d2, d3 := float64(x[j])-mean, float64(x[j+1])-mean, float64(x[j+2])-mean, float64(x[j+3])-mean
			s0, s1, s2, s3 = s0+d0*d0, s1+d1*d1, s2+d2*d2, s3+d3*d3
		}
		for _, v := range x[n:] {
			d := float64(v) - mean
			s0 += d * d
		}
		variance := ((s0 + s1) + (s2 + s3)) / float64(len(x))
		inv := 1 / math.Sqrt(variance+eps)
		for j, v := range x {
			y[j] = float32((float64(v)-mean)*inv)*scale[j] + bias[j]
		}
	}
}

// Softmax turns x into probabilities, in place. With the kernel, whole
// blocks of eight go through the vector instructions (exponentials were a
// third of a long text's embedding time, one at a time), the rest the
// same arithmetic in Go.
func Softmax(x []float32) {
	block := 0
	if Kernel {
		block = len(x) / 8 * 8
	}
	top := float32(math.Inf(-1))
	if block > 0 {
		top = max8(&x[0], block)
	}
	for _, v := range x[block:] {
		top = max(top, v)
	}
	var sum float64
	if block > 0 {
		sum = float64(expShift8(&x[0], block, top))
	}
	for i, v := range x[block:] {
		e := Exp(v - top)
		x[block+i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	if block > 0 {
		scale8(&x[0], block, inv)
	}
	for i := range x[block:] {
		x[block+i] *= inv
	}
}

// Exp is e^x in float32, within 3e-7 of math.Exp's (TestExp) and several
// times as fast: softmax's exponentials were a
// quarter of a long text's embedding time. Under -87.3 it is 0 (the
// numbers float32 holds only without full precision are left out).
func Exp(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2Hi = 0.693145751953125 // ln 2's first 16 bits: k·ln2Hi is exact
		ln2Lo = 1.42860682030941723212e-6
	)
	switch {
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -87.33654:
		return 0
	case x != x:
		return x
	}
	k := float32(math.Round(float64(x * log2e)))
	r := x - k*ln2Hi - k*ln2Lo // |r| ≤ ln2/2
	// e^r by its Taylor series to r⁷/7!: the rest is under 6e-9 of it.
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	// × 2^k, in two steps so that k = 128 (x near the top) does not overflow
	// the exponent's field.
	half := int32(k) / 2
	return p * math.Float32frombits(uint32(half+127)<<23) * math.Float32frombits(uint32(int32(k)-half+127)<<23)
}
