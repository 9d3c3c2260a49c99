package mat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// reference is x·Wᵀ + b the plainest way, in float64.
func reference(x, w Matrix, bias []float32) Matrix {
	out := New(x.Rows, w.Rows)
	for i := range x.Rows {
		for o := range w.Rows {
			sum := float64(bias[o])
			for k := range x.Cols {
				sum += float64(x.Row(i)[k]) * float64(w.Row(o)[k])
			}
			out.Row(i)[o] = float32(sum)
		}
	}
	return out
}

func random(r *rand.Rand, rows, cols int) Matrix {
	m := New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(r.NormFloat64())
	}
	return m
}

// withKernel runs fn with the kernel on (where this machine has it) and
// with the portable path, whichever the environment chose.
func withKernel(t *testing.T, fn func(t *testing.T)) {
	was := Kernel
	t.Cleanup(func() { Kernel = was })
	for _, on := range []bool{false, true} {
		if on && !(haveKernel && kernelUsable()) {
			continue
		}
		Kernel = on
		name := "portable"
		if on {
			name = "kernel"
		}
		t.Run(name, fn)
	}
}

// benchKernels runs fn with the portable path and, where this machine has
// it, the kernel.
func benchKernels(b *testing.B, fn func(b *testing.B)) {
	was := Kernel
	b.Cleanup(func() { Kernel = was })
	for _, on := range []bool{false, true} {
		if on && !(haveKernel && kernelUsable()) {
			continue
		}
		Kernel = on
		b.Run(map[bool]string{false: "portable", true: "kernel"}[on], fn)
	}
}

// checkProduct compares Linear's product with the reference: each value
// within float32 rounding of a sum of k products.
func checkProduct(t *testing.T, x, w Matrix, bias []float32) {
	t.Helper()
	checkClose(t, "x·Wᵀ+b, W kept [in, out]", NewLinearT(transpose(w), bias).Of(x), reference(x, w, bias))
	got, want := NewLinear(w, bias).Of(x), reference(x, w, bias)
	if got.Rows != want.Rows || got.Cols != want.Cols {
		t.Fatalf("%d×%d times (%d×%d)ᵀ made %d×%d", x.Rows, x.Cols, w.Rows, w.Cols, got.Rows, got.Cols)
	}
	tol := 1e-5 * math.Sqrt(float64(x.Cols+1)) * 4
	for i, v := range got.Data {
		if d := math.Abs(float64(v - want.Data[i])); d > tol*(1+math.Abs(float64(want.Data[i]))) || math.IsNaN(float64(v)) {
			t.Fatalf("%d×%d times (%d×%d)ᵀ: value %d (row %d, column %d) is %g, want %g", x.Rows, x.Cols, w.Rows, w.Cols,
				i, i/got.Cols, i%got.Cols, v, want.Data[i])
		}
	}
}

// Every shape the encoders use, and every tail around the tile: rows and
// columns not multiples of 6 and 16, one row, one input.
func TestLinearMatchesTheReference(t *testing.T) {
	withKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, rows := range []int{0, 1, 2, 5, 6, 7, 12, 13, 16, 31} {
			for _, in := range []int{1, 2, 7, 16, 33, 384} {
				for _, out := range []int{1, 5, 15, 16, 17, 32, 40, 384} {
					checkProduct(t, random(r, rows, in), random(r, out, in), random(r, 1, out).Data)
				}
			}
		}
		// The encoders' own: a query's 16 pieces and a batch's 200 rows
		// through the feed-forward layers (split between cores).
		for _, rows := range []int{16, 200} {
			checkProduct(t, random(r, rows, 384), random(r, 1536, 384), random(r, 1, 1536).Data)
			checkProduct(t, random(r, rows, 1536), random(r, 384, 1536), random(r, 1, 384).Data)
		}
	})
}

func FuzzLinear(f *testing.F) {
	f.Add(uint8(7), uint8(9), uint8(17), uint64(1))
	f.Add(uint8(1), uint8(1), uint8(1), uint64(2))
	f.Fuzz(func(t *testing.T, rows, in, out uint8, seed uint64) {
		if in == 0 {
			in = 1
		}
		r := rand.New(rand.NewPCG(seed, 7))
		withKernel(t, func(t *testing.T) {
			checkProduct(t, random(r, int(rows)%64, int(in)), random(r, int(out)%80+1, int(in)), random(r, 1, int(out)%80+1).Data)
		})
	})
}

// BenchmarkLinear: multiply-adds per second (GMAC/s) of the encoders'
// dense layers, for a 16-piece query and for a batch of 16 such texts,
// on each path.
//
//	go test -run '^$' -bench Linear -cpu 1 ./pkg/embed/internal/mat
func BenchmarkLinear(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, path := range []string{"kernel", "portable"} {
		on := path == "kernel"
		if on && !(haveKernel && kernelUsable()) {
			continue
		}
		for _, rows := range []int{16, 256} {
			for _, shape := range [][2]int{{384, 384}, {384, 1536}, {1536, 384}} {
				in, out := shape[0], shape[1]
				b.Run(fmt.Sprintf("%s/rows=%d/%dx%d", path, rows, in, out), func(b *testing.B) {
					was := Kernel
					Kernel = on
					l := NewLinear(random(r, out, in), random(r, 1, out).Data)
					Kernel = was
					x := random(r, rows, in)
					for b.Loop() {
						l.Of(x)
					}
					b.ReportMetric(float64(b.N)*float64(rows*in*out)/b.Elapsed().Seconds()/1e9, "GMAC/s")
				})
			}
		}
	}
}

// Attention's products, on each path, at the shapes a text makes (a head
// is 32 wide for MiniLM, 64 for USE-lite) and around the tile's edges.
func TestProductsMatchTheReference(t *testing.T) {
	withKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		var pair Pair // one for all: each product lays out over the last one's memory
		sizes := []int{1, 2, 5, 6, 7, 16, 17, 33, 128, 33, 17, 7, 1}
		for _, n := range sizes {
			for _, d := range []int{1, 15, 16, 32, 64} {
				a, b := random(r, n, d), random(r, n, d)
				scores, attended := New(n, n), New(n, d)
				pair.ProductT(a, b, scores)
				checkClose(t, "a·bᵀ", scores, reference(a, b, make([]float32, n)))
				p := random(r, n, n)
				pair.Product(p, b, attended)
				checkClose(t, "a·b", attended, reference(p, transpose(b), make([]float32, d)))
			}
		}
	})
}

func transpose(m Matrix) Matrix {
	t := New(m.Cols, m.Rows)
	for i := range m.Rows {
		for j, v := range m.Row(i) {
			t.Row(j)[i] = v
		}
	}
	return t
}

func checkClose(t *testing.T, what string, got, want Matrix) {
	t.Helper()
	if got.Rows != want.Rows || got.Cols != want.Cols {
		t.Fatalf("%s: %d×%d, want %d×%d", what, got.Rows, got.Cols, want.Rows, want.Cols)
	}
	for i, v := range got.Data {
		if math.Abs(float64(v-want.Data[i])) > 1e-4*(1+math.Abs(float64(want.Data[i]))) {
			t.Fatalf("%s (%d×%d): value %d is %g, want %g", what, got.Rows, got.Cols, i, v, want.Data[i])
		}
	}
}

// Into overwrites whatever out held, and the buffers a product keeps for
// the next, left as a larger product wrote them, change nothing: on every
// path this machine has.
func TestIntoOverwritesWhatOutHeld(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x, w, bias := random(r, 5, 33), random(r, 37, 33), random(r, 1, 37).Data
	clear(x.Row(2)) // a row of zeros, which quantises to nothing
	big, bigW, bigBias := random(r, 40, 100), random(r, 70, 100), random(r, 1, 70).Data
	check := func(t *testing.T, newLinear func(w Matrix, bias []float32) *Linear) {
		l, other := newLinear(w, bias), newLinear(bigW, bigBias)
		want := l.Of(x)
		other.Of(big)
		out := New(x.Rows, l.Out)
		for i := range out.Data {
			out.Data[i] = float32(math.NaN())
		}
		l.Into(x, out)
		if !slices.Equal(out.Data, want.Data) {
			t.Fatalf("Into over a used matrix gave %v, want %v", out.Data, want.Data)
		}
	}
	t.Run("float32", func(t *testing.T) { check(t, NewLinear) })
	for _, kernel := range int8Kernels(t) {
		for _, bits := range []Activations{Activations16, Activations8} {
			t.Run(fmt.Sprintf("int8 on %s, %d-bit activations", kernel, bits), func(t *testing.T) {
				useInt8(t, kernel)
				check(t, func(w Matrix, bias []float32) *Linear { return NewInt8(w, bias, bits) })
			})
		}
	}
}

// TestAProductAllocatesNoBuffer: a product keeps its buffers from one
// call to the next (the float32 path's last rows padded to a tile, the
// int8 path's tile at an edge), so a question's hundreds of products do
// not each allocate a tile's worth for the collector: they allocated
// 1.5 MB a question when the edge tile escaped through a func value.
func TestAProductAllocatesNoBuffer(t *testing.T) {
	if raceEnabled {
		t.Skip("second pass: measured without the race detector, whose sync.Pool drops buffers on purpose")
	}
	r := rand.New(rand.NewPCG(9, 10))
	// 20 rows and 70 columns: a tail of rows and an edge of columns on
	// every kernel.
	x, w, bias := random(r, 20, 100), random(r, 70, 100), random(r, 1, 70).Data
	check := func(t *testing.T, l *Linear) {
		out := New(x.Rows, l.Out)
		l.Into(x, out) // the buffers are made once
		const runs = 100
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			l.Into(x, out)
		}
		runtime.ReadMemStats(&after)
		// A tile of the smallest kernel is 6 rows × 16 columns of float32
		// (384 bytes); what a product may allocate (its closure, a job for
		// a helper) is smaller.
		if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun >= 384 {
			t.Errorf("a product allocated %d bytes, want less than a tile's 384", perRun)
		}
	}
	t.Run("float32", func(t *testing.T) { check(t, NewLinear(w, bias)) })
	for _, kernel := range int8Kernels(t) {
		for _, bits := range []Activations{Activations16, Activations8} {
			t.Run(fmt.Sprintf("int8 on %s, %d-bit activations", kernel, bits), func(t *testing.T) {
				useInt8(t, kernel)
				check(t, NewInt8(w, bias, bits))
			})
		}
	}
}
