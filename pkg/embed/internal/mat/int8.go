package mat

import (
	"math"
	"os"
	"sync"
)

// Int8 reports whether dense layers made by NewInt8 keep int8 weights and
// multiply them in integers rather than in float32: a quarter of the
// weights' bytes to read, and more multiply-adds a cycle, on every
// processor the kernel runs on. HECTOR_KERNELS=portable or =float32 turns
// it off.
var Int8 = Kernel && os.Getenv(KernelsEnv) != "float32"

// VNNI reports whether int8 products run on AVX-512 VNNI (a multiply-add
// of pairs, or of four bytes, into each 32-bit lane in one instruction)
// rather than on AVX2 (a multiply of pairs, then an add: 1.5 times
// float32's multiply-adds a cycle on Zen 3). HECTOR_KERNELS=avx2 takes
// AVX2 where VNNI is there too: how the tests cover both.
var VNNI = Int8 && vnniUsable() && os.Getenv(KernelsEnv) != "avx2"

// Int8Kernels names the int8 kernels this machine has, whatever
// HECTOR_KERNELS says: "avx2", and "vnni" with AVX-512 VNNI. For tests
// that cover each.
func Int8Kernels() []string {
	switch {
	case !haveKernel || !kernelUsable():
		return nil
	case !vnniUsable():
		return []string{"avx2"}
	}
	return []string{"avx2", "vnni"}
}

// UseInt8 makes NewInt8 lay weights out for the int8 kernel named ("" for
// none: float32), and returns what puts the choice back. For tests.
func UseInt8(kernel string) (restore func()) {
	int8, vnni := Int8, VNNI
	Int8, VNNI = kernel != "", kernel == "vnni"
	return func() { Int8, VNNI = int8, vnni }
}

// The VNNI kernel's tile: 8 rows × 32 output columns, over steps of 2
// inputs with 16-bit activations (one VNNI dot product of two 16-bit
// pairs per 32-bit lane), or of 4 with 8-bit ones (four byte products); a
// tail of 4 rows or fewer takes a tile of 4. A panel of weights is 32
// columns wide whatever the kernel; the AVX2 kernel's tile is 6 rows ×
// half a panel (3 in a tail), its 16 registers' worth.
const (
	int8Rows  = 8
	int8Width = 32
	avx2Rows  = 6
	avx2Width = 16
)

// Activations is how many bits a dense layer's int8 product quantises its
// inputs to.
type Activations int

const (
	// Activations16: within about 0.5% of float32's products whatever the
	// model (a BERT's activations can have channels tens of times larger
	// than the rest, which 8 bits would leave a few steps).
	Activations16 Activations = 16
	// Activations8: twice the multiply-adds an instruction (VPDPBUSD), for
	// a model whose vectors stay close to its original's so: e5-small-v2's
	// lowest cosine to its reference vectors is 0.998 (0.9997 with 16);
	// all-MiniLM-L6-v2's falls to 0.979, and it keeps 16. Without VNNI
	// the products take 16 bits anyway: AVX2's byte product (VPMADDUBSW)
	// saturates at 16 bits, where two of 255 × 127 do not fit.
	Activations8 Activations = 8
)

// int8Weights is a dense layer's weights quantised symmetrically per
// output column: w ≈ q · scale, q in [-127, 127]. The 16-bit kernel widens
// them as it loads them, the width of the activations they multiply;
// kept in 8 bits they take half the memory and half the reading.
type int8Weights struct {
	vnni  bool // the kernel it multiplies on: VNNI's, else AVX2's
	step  int  // inputs a 32-bit lane sums: 2 with 16-bit activations, 4 with 8-bit
	steps int  // In rounded up to a whole step, in steps
	// panels: int8Width columns each, steps of int8Width × step weights
	// (one column's step inputs together), zeros past Out and In.
	panels []int8
	scale  []float32 // per column, padded to whole panels
	levels float32   // the activations' largest quantised magnitude
	// offset: with 8-bit activations, which the kernel reads unsigned
	// (q + 128), 128 times each column's weights summed: what the 128s add.
	offset []int32
}

// NewInt8 is NewLinear for a model's dense layer whose weights may be
// quantised to int8: where Int8, its products quantise each row of x to
// the bits given (scaled by its largest magnitude), and come out within
// about 0.5% of float32's with 16 bits (1% with 8), enough for an
// encoder's vectors, not for exact arithmetic. Where not, it is
// NewLinear.
func NewInt8(w Matrix, bias []float32, bits Activations) *Linear {
	if !Int8 || w.Cols == 0 || w.Rows == 0 {
		return NewLinear(w, bias)
	}
	l := &Linear{Out: w.Rows, In: w.Cols}
	panels := (l.Out + int8Width - 1) / int8Width
	l.bias = make([]float32, panels*int8Width)
	copy(l.bias, bias)
	q := &int8Weights{vnni: VNNI, step: 2}
	if bits == Activations8 && q.vnni {
		q.step = 4
		q.offset = make([]int32, len(l.bias))
	}
	q.steps = (l.In + q.step - 1) / q.step
	// The 32-bit sums must not overflow: In products of 127 × levels at
	// most (255 × 127 with 8-bit activations, which overflow nowhere near).
	q.levels = float32(min(math.MaxInt16, math.MaxInt32/(127*(q.step*q.steps))))
	if q.step == 4 {
		q.levels = 127
	}
	q.panels = make([]int8, panels*q.steps*int8Width*q.step)
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
		panel := q.panels[o/int8Width*q.steps*int8Width*q.step:]
		for k, v := range row {
			b := int8(math.RoundToEven(float64(v * inv)))
			panel[(k/q.step*int8Width+o%int8Width)*q.step+k%q.step] = b
			if q.offset != nil {
				q.offset[o] += 128 * int32(b)
			}
		}
	}
	l.q = q
	return l
}

// int8Of is x·Wᵀ + b on the int8 kernel.
func (l *Linear) int8Of(x, out Matrix) {
	q := l.q
	tileRows, tileWidth := int8Rows, int8Width
	if !q.vnni {
		tileRows, tileWidth = avx2Rows, avx2Width
	}
	// A row's activations are padded to whole steps, the last tile with
	// rows, that the kernel multiplies and nothing reads: the weights past
	// In are zeros, and the padding rows' results are left out. So the
	// buffers, kept from one product to the next, are never cleared.
	stride := q.steps * q.step
	rows := (x.Rows + tileRows - 1) / tileRows * tileRows
	s := scratches.Get().(*scratch)
	defer scratches.Put(s)
	t := tiles{q: q, l: l, lda: stride, scales: grow(&s.scales, rows)}
	if q.step == 4 {
		t.bytes = grow(&s.bytes, rows*stride)
		for i := range x.Rows {
			t.scales[i] = quantiseBytes(t.bytes[i*stride:][:l.In], x.Row(i), q.levels)
		}
	} else {
		t.words = grow(&s.words, rows*stride)
		for i := range x.Rows {
			t.scales[i] = quantise(t.words[i*stride:][:l.In], x.Row(i), q.levels)
		}
	}
	// A part is a whole panel, all its tiles on one core: the AVX2 tiles
	// take half a panel's columns, but a panel's every cache line holds
	// both halves, and two cores sharing the halves each read it all.
	split(len(l.bias)/int8Width, x.Rows*l.Out*l.In, func(from, to int) {
		var edge [int8Rows * int8Width]float32
		for col := from * int8Width; col < to*int8Width; col += tileWidth {
			if col >= l.Out {
				break // the last panel's second half, all padding
			}
			b := &q.panels[(col/int8Width*q.steps*int8Width+col%int8Width)*q.step]
			cols := min(tileWidth, l.Out-col)
			for i := 0; i < x.Rows; i += tileRows {
				short, n := x.Rows-i <= tileRows/2, tileRows // a short tail: half the padded tile's work
				if short {
					n = tileRows / 2
				}
				if cols == tileWidth && i+n <= x.Rows {
					t.tile(short, i, b, col, &out.Data[i*l.Out+col], l.Out)
					continue
				}
				t.tile(short, i, b, col, &edge[0], tileWidth)
				for r := range min(n, x.Rows-i) {
					copy(out.Data[(i+r)*l.Out+col:][:cols], edge[r*tileWidth:])
				}
			}
		}
	})
}

// tiles is one product's quantised activations (words or bytes, lda
// apart, each row's scale in scales), for its kernel to multiply a tile
// at a time.
type tiles struct {
	q      *int8Weights
	l      *Linear
	lda    int
	words  []int16
	bytes  []uint8
	scales []float32
}

// tile multiplies rows i to i+tileRows (or half as many, with short) by
// the weights at b, whose first column is col, into c. Each kernel is
// called by name, not through a func value, so that c (a tile of the
// caller's stack at a product's edge) is known not to escape: through a
// func value it was allocated afresh for every part of every product, a
// megabyte a question.
func (t *tiles) tile(short bool, i int, b *int8, col int, c *float32, ldc int) {
	q, l := t.q, t.l
	switch {
	case q.step == 4 && short:
		int8Tile4x32u(&t.bytes[i*t.lda], t.lda, &t.scales[i], b, q.steps, &q.scale[col], &l.bias[col], &q.offset[col], c, ldc)
	case q.step == 4:
		int8Tile8x32u(&t.bytes[i*t.lda], t.lda, &t.scales[i], b, q.steps, &q.scale[col], &l.bias[col], &q.offset[col], c, ldc)
	case q.vnni && short:
		int8Tile4x32(&t.words[i*t.lda], 2*t.lda, &t.scales[i], b, q.steps, &q.scale[col], &l.bias[col], c, ldc)
	case q.vnni:
		int8Tile8x32(&t.words[i*t.lda], 2*t.lda, &t.scales[i], b, q.steps, &q.scale[col], &l.bias[col], c, ldc)
	case short:
		int8Tile3x16(&t.words[i*t.lda], 2*t.lda, &t.scales[i], b, q.steps, &q.scale[col], &l.bias[col], c, ldc)
	default:
		int8Tile6x16(&t.words[i*t.lda], 2*t.lda, &t.scales[i], b, q.steps, &q.scale[col], &l.bias[col], c, ldc)
	}
}

// scratch is a product's buffers, kept for the next product (see Into):
// an int8 product's quantised activations and their scales, a float32
// product's last rows padded to a tile.
type scratch struct {
	words  []int16
	bytes  []uint8
	scales []float32
	floats []float32
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// quantise writes x's values as integers, v ≈ q · scale with |q| ≤ levels,
// and returns the scale: the row's largest magnitude over levels. Whole
// blocks of 16 values go through the vector instructions, the rest the
// same arithmetic in Go.
func quantise(dst []int16, x []float32, levels float32) float32 {
	top, block := largest(x)
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

// quantiseBytes is quantise into bytes, each q + 128 (levels ≤ 127): the
// unsigned operand VPDPBUSD takes.
func quantiseBytes(dst []uint8, x []float32, levels float32) float32 {
	top, block := largest(x)
	if top == 0 {
		return 0
	}
	inv := levels / top
	if block > 0 {
		quantiseBytes16(&dst[0], &x[0], block, inv)
	}
	for k, v := range x[block:] {
		dst[block+k] = uint8(int(math.RoundToEven(float64(v*inv))) + 128)
	}
	return top / levels
}

// largest is x's largest magnitude; block, how many of its values are in
// whole blocks of 16, which go through the vector instructions.
func largest(x []float32) (top float32, block int) {
	block = len(x) / 16 * 16
	if block > 0 {
		top = maxAbs16(&x[0], block)
	}
	for _, v := range x[block:] {
		top = max(top, abs(v))
	}
	return top, block
}

func abs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
