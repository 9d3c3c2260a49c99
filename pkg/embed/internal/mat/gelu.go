package mat

import "math"

// GELU applies the exact GELU BERT uses, x·Φ(x), to every value of x, by
// linear interpolation in a table of it made once from math.Erf: the erf
// of every value was half of a query's embedding time, and the table's
// error (under 1e-6, TestGELU) is far below what float32 weights carry.
// With the kernel, whole blocks of eight go through the vector
// instructions, the rest the same arithmetic in Go.
func GELU(x []float32) {
	block := 0
	if Kernel {
		block = len(x) / 8 * 8
	}
	if block > 0 {
		gelu8(&x[0], block, &geluTable[0])
	}
	for i, v := range x[block:] {
		switch {
		case v > -geluEdge && v < geluEdge:
			f := (v + geluEdge) * geluScale
			j := int(f)
			frac := f - float32(j)
			x[block+i] = geluTable[j] + frac*(geluTable[j+1]-geluTable[j])
		case v <= -geluEdge:
			x[block+i] = 0
		}
		// Past geluEdge, Φ(x) is 1 within float32: x stays (and NaN stays NaN).
	}
}

// GELUExact is x·Φ(x) computed with math.Erf, in float64.
func GELUExact(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

const (
	geluEdge  = 8
	geluSteps = 1 << 14
	geluScale = geluSteps / (2 * geluEdge)
)

var geluTable = func() []float32 {
	t := make([]float32, geluSteps+2) // +1 for the last step's end, +1 for rounding at the edge
	for j := range t {
		t[j] = float32(GELUExact(float64(j)/geluScale - geluEdge))
	}
	return t
}()
