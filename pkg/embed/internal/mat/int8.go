package mat

import (
	"math"
	"os"
)

// Int8 reports whether dense layers made by NewInt8 keep int8 weights and
// multiply them on AVX-512 VNNI (twice float32's multiply-adds a cycle)
// rather than in float32. HECTOR_KERNELS=portable or =float32 turns it
// off.
var Int8 = haveKernel && int8Usable() && os.Getenv(KernelsEnv) != "portable" && os.Getenv(KernelsEnv) != "float32"

// The int8 kernel's tile: 8 rows × 32 output columns, over steps of 2
// inputs (one VNNI dot product of two 16-bit pairs per 32-bit lane); a
// tail of 4 rows or fewer takes a tile of 4.
const (
	int8Rows  = 8
	int8Width = 32
	int8Step  = 2
)

// int8Weights is a dense layer's weights quantised symmetrically per
// output column: w ≈ q · scale, q in [-127, 127]. The kernel widens them to
// 16 bits as it loads them, the width of the activations they multiply:
// activations need more than 8 bits (BERT's have channels tens of times
// larger than the rest, which would leave the rest a few steps), weights
// do not, and kept in 8 they take half the memory and half the reading.
type int8Weights struct {
	steps int // In rounded up to a whole step, in steps
	// panels: int8Width columns each, steps of int8Width × int8Step
	// weights (one column's two inputs together), zeros past Out and In.
	panels []int8
	scale  []float32 // per column, padded to whole panels
	levels float32   // the activations' largest quantised magnitude
}

// NewInt8 is NewLinear for a model's dense layer whose weights may be
// quantised to int8: where Int8, its products quantise each row of x to
// 16 bits (scaled by its largest magnitude), and come out within about
// 0.5% of float32's, enough for an encoder's vectors (cosine ≥ 0.99 to
// float32's), not for exact arithmetic. Elsewhere it is NewLinear.
func NewInt8(w Matrix, bias []float32) *Linear {
	if !Int8 || w.Cols == 0 || w.Rows == 0 {
		return NewLinear(w, bias)
	}
	l := &Linear{Out: w.Rows, In: w.Cols}
	panels := (l.Out + int8Width - 1) / int8Width
	l.bias = make([]float32, panels*int8Width)
	copy(l.bias, bias)
	q := &int8Weights{steps: (l.In + int8Step - 1) / int8Step}
	// The 32-bit sums must not overflow: In products of 127 × levels at
	// most.
	q.levels = float32(min(math.MaxInt16, math.MaxInt32/(127*(2*q.steps))))
	q.panels = make([]int8, panels*q.steps*int8Width*int8Step)
	q.scale = make([]float32, len(l.bias))
	for o := range l.Out {
		row := w.Row(o)
		var top float32
		for _, v := range row {
			top = max(top, abs(v))
		}
		if top == 0 {
			continue
		}
		q.scale[o] = top / 127
		inv := 127 / top
		panel := q.panels[o/int8Width*q.steps*int8Width*int8Step:]
		for k, v := range row {
			panel[(k/int8Step*int8Width+o%int8Width)*int8Step+k%int8Step] = int8(math.RoundToEven(float64(v * inv)))
		}
	}
	l.q = q
	return l
}

// int8Of is x·Wᵀ + b on the int8 kernel.
func (l *Linear) int8Of(x, out Matrix) {
	q := l.q
	stride := q.steps * int8Step
	rows := (x.Rows + int8Rows - 1) / int8Rows * int8Rows // the last tile padded with zero rows
	a := make([]int16, rows*stride)
	scales := make([]float32, rows)
	for i := range x.Rows {
		scales[i] = quantise(a[i*stride:][:l.In], x.Row(i), q.levels)
	}
	split(len(l.bias)/int8Width, x.Rows*l.Out*l.In, func(from, to int) {
		var edge [int8Rows * int8Width]float32
		for p := from; p < to; p++ {
			b := &q.panels[p*q.steps*int8Width*int8Step]
			col := p * int8Width
			cols := min(int8Width, l.Out-col)
			for i := 0; i < x.Rows; i += int8Rows {
				kernel, n := int8Tile8x32, int8Rows
				if x.Rows-i <= int8Rows/2 { // a short tail: half the padded tile's work
					kernel, n = int8Tile4x32, int8Rows/2
				}
				tile := func(c *float32, ldc int) {
					kernel(&a[i*stride], 2*stride, &scales[i], b, q.steps, &q.scale[col], &l.bias[col], c, ldc)
				}
				if cols == int8Width && i+n <= x.Rows {
					tile(&out.Data[i*l.Out+col], l.Out)
					continue
				}
				tile(&edge[0], int8Width)
				for r := range min(n, x.Rows-i) {
					copy(out.Data[(i+r)*l.Out+col:][:cols], edge[r*int8Width:])
				}
			}
		}
	})
}

// quantise writes x's values as integers, v ≈ q · scale with |q| ≤ levels,
// and returns the scale: the row's largest magnitude over levels. Whole
// blocks of 16 values go through the vector instructions, the rest the
// same arithmetic in Go.
func quantise(dst []int16, x []float32, levels float32) float32 {
	block := len(x) / 16 * 16
	var top float32
	if block > 0 {
		top = maxAbs16(&x[0], block)
	}
	for _, v := range x[block:] {
		top = max(top, abs(v))
	}
	if top == 0 {
		return 0
	}
	inv := levels / top
	if block > 0 {
		quantise16(&dst[0], &x[0], block, inv)
	}
	for k, v := range x[block:] {
		dst[block+k] = int16(math.RoundToEven(float64(v * inv)))
	}
	return top / levels
}

func abs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
