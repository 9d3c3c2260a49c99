package mat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// int8Kernels is Int8Kernels, skipping where this machine has none.
func int8Kernels(t testing.TB) []string {
	kernels := Int8Kernels()
	if len(kernels) == 0 {
		t.Skip("n/a: this processor has no AVX2 and FMA, which the int8 kernels need")
	}
	if len(kernels) == 1 {
		t.Log("this processor has no AVX-512 VNNI: only the AVX2 int8 kernel is tested")
	}
	return kernels
}

// useInt8 is UseInt8 until t ends.
func useInt8(t testing.TB, kernel string) { t.Cleanup(UseInt8(kernel)) }

// dequantised is what the int8 product multiplies, back in float32: x's
// rows and W's columns as their integers times their scales.
func dequantised(l *Linear, x Matrix) (xq, wq Matrix) {
	q := l.q
	xq, wq = New(x.Rows, x.Cols), New(l.Out, l.In)
	for i := range x.Rows {
		if q.step == 4 {
			b := make([]uint8, x.Cols)
			s := quantiseBytes(b, x.Row(i), q.levels)
			for k, v := range b {
				if s != 0 {
					xq.Row(i)[k] = float32(int(v)-128) * s
				}
			}
			continue
		}
		b := make([]int16, x.Cols)
		s := quantise(b, x.Row(i), q.levels)
		for k, v := range b {
			xq.Row(i)[k] = float32(v) * s
		}
	}
	for o := range l.Out {
		panel := q.panels[o/int8Width*q.steps*int8Width*q.step:]
		for k := range l.In {
			wq.Row(o)[k] = float32(panel[(k/q.step*int8Width+o%int8Width)*q.step+k%q.step]) * q.scale[o]
		}
	}
	return xq, wq
}

// checkInt8 checks the int8 product two ways: against the reference
// product of what it multiplies (the kernel's integer sums and scaling are
// exact up to float32 rounding), and against the float product (what
// quantising costs: each row's error small beside the row).
func checkInt8(t *testing.T, x, w Matrix, bias []float32, bits Activations) {
	t.Helper()
	l := NewInt8(w, bias, bits)
	if l.q == nil {
		t.Fatal("NewInt8 did not quantise")
	}
	got := l.Of(x)
	xq, wq := dequantised(l, x)
	want := reference(xq, wq, bias)
	tol := 1e-5 * math.Sqrt(float64(x.Cols+1)) * 4
	for i, v := range got.Data {
		if d := math.Abs(float64(v - want.Data[i])); d > tol*(1+math.Abs(float64(want.Data[i]))) || math.IsNaN(float64(v)) {
			t.Fatalf("%d-bit activations: %d×%d times (%d×%d)ᵀ: value %d (row %d, column %d) is %g, want %g", bits, x.Rows, x.Cols, w.Rows, w.Cols,
				i, i/got.Cols, i%got.Cols, v, want.Data[i])
		}
	}
	// Quantising rounds each value by up to half a step of its row's (or
	// column's) largest over 127 (or over 32,767 with 16-bit activations):
	// on random data the product comes out about 0.5% off (0.55% with 8-bit
	// ones, a single row up to 1.1%); one value alone can be further, so the
	// whole is judged.
	exact := reference(x, w, bias)
	var diff, size float64
	for i, v := range got.Data {
		e := float64(exact.Data[i])
		diff += (float64(v) - e) * (float64(v) - e)
		size += e * e
	}
	bound := map[Activations]float64{Activations16: 0.01, Activations8: 0.02}[bits]
	if len(got.Data) >= 64 && math.Sqrt(diff/size) > bound {
		t.Fatalf("%d-bit activations: %d×%d times (%d×%d)ᵀ is %.3f off the float product, relatively", bits, x.Rows, x.Cols, w.Rows, w.Cols, math.Sqrt(diff/size))
	}
}

// Every tail around the tiles (8 and 4 rows × 32 columns with VNNI, 6 and
// 3 × 16 with AVX2) and the input steps, and the encoders' own shapes,
// with activations in 16 bits and in 8, on each int8 kernel.
func TestInt8MatchesTheReference(t *testing.T) {
	for _, kernel := range int8Kernels(t) {
		t.Run(kernel, func(t *testing.T) {
			useInt8(t, kernel)
			int8MatchesTheReference(t)
		})
	}
}

func int8MatchesTheReference(t *testing.T) {
	for _, bits := range []Activations{Activations16, Activations8} {
		r := rand.New(rand.NewPCG(3, 4))
		for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 20, 31} {
			for _, in := range []int{1, 3, 4, 5, 7, 33, 384} {
				for _, out := range []int{1, 15, 16, 17, 31, 32, 33, 48, 64, 384} {
					checkInt8(t, random(r, rows, in), random(r, out, in), random(r, 1, out).Data, bits)
				}
			}
		}
		for _, rows := range []int{16, 200} {
			checkInt8(t, random(r, rows, 384), random(r, 1536, 384), random(r, 1, 1536).Data, bits)
			checkInt8(t, random(r, rows, 1536), random(r, 384, 1536), random(r, 1, 384).Data, bits)
		}
		// Zero rows and zero columns quantise to scale 0, not to NaN.
		x, w := random(r, 9, 40), random(r, 33, 40)
		clear(x.Row(3))
		clear(w.Row(5))
		checkInt8(t, x, w, random(r, 1, 33).Data, bits)
	}
}

// The vector instructions quantise a row as the Go loop does: the same
// scale, the same integers (halves rounded to even), at every length, to
// 16-bit words at the extremes of their range (both int8 kernels) and to
// bytes (VNNI's alone).
func TestQuantiseMatchesGo(t *testing.T) {
	if !(haveKernel && kernelUsable()) {
		t.Skip("n/a: this processor has no AVX2 and FMA, which the int8 kernels need")
	}
	r := rand.New(rand.NewPCG(11, 12))
	for n := 1; n <= 70; n++ {
		x := make([]float32, n)
		for k := range x {
			x[k] = r.Float32()*2 - 1
		}
		// The largest, 4, makes the steps 2 apart with 2 levels: 1 and 3
		// are halves, and round to 0 and 2.
		x[0], x[n/2] = 1, -3
		x[n-1] = 4
		var top float32
		for _, v := range x {
			top = max(top, float32(math.Abs(float64(v))))
		}
		for _, levels := range []float32{2, math.MaxInt16} {
			got := make([]int16, n)
			if scale := quantise(got, x, levels); scale != top/levels {
				t.Fatalf("n=%d, %g levels: scale %g, want %g", n, levels, scale, top/levels)
			}
			for k, v := range x {
				if want := int16(math.RoundToEven(float64(v * (levels / top)))); got[k] != want {
					t.Fatalf("n=%d, %g levels: value %d (%g) quantised to %d, want %d", n, levels, k, v, got[k], want)
				}
			}
		}
		if !vnniUsable() {
			continue
		}
		bytes := make([]uint8, n)
		if scale := quantiseBytes(bytes, x, 2); scale != top/2 {
			t.Fatalf("n=%d: scale %g (bytes), want %g", n, scale, top/2)
		}
		for k, v := range x {
			if want := int(math.RoundToEven(float64(v*(2/top)))) + 128; int(bytes[k]) != want {
				t.Fatalf("n=%d: value %d (%g) quantised to byte %d, want %d", n, k, v, bytes[k], want)
			}
		}
	}
}

func TestInt8IsOffWhenPortableIsAsked(t *testing.T) {
	was := Int8
	defer func() { Int8 = was }()
	Int8 = false
	if l := NewInt8(random(rand.New(rand.NewPCG(1, 1)), 4, 4), make([]float32, 4), Activations8); l.q != nil {
		t.Fatal("NewInt8 quantised with Int8 off")
	}
}

func FuzzInt8(f *testing.F) {
	f.Add(uint8(9), uint8(5), uint8(33), uint64(1))
	f.Add(uint8(1), uint8(1), uint8(1), uint64(2))
	f.Fuzz(func(t *testing.T, rows, in, out uint8, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 9))
		bits := map[bool]Activations{false: Activations16, true: Activations8}[seed%2 == 1]
		x, w, bias := random(r, int(rows)%64+1, int(in)%200+1), random(r, int(out)%80+1, int(in)%200+1), random(r, 1, int(out)%80+1).Data
		for _, kernel := range int8Kernels(t) {
			restore := UseInt8(kernel)
			checkInt8(t, x, w, bias, bits)
			restore()
		}
	})
}

// BenchmarkInt8: multiply-adds per second (GMAC/s) of the encoders' dense
// layers in int8, quantising the rows included.
//
//	go test -run '^$' -bench Int8 -cpu 1 ./pkg/embed/internal/mat
func BenchmarkInt8(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, kernel := range int8Kernels(b) {
		restore := UseInt8(kernel)
		for _, bits := range []Activations{Activations16, Activations8} {
			for _, rows := range []int{16, 20, 256} { // 20: a question with its prefix and marks
				for _, shape := range [][2]int{{384, 384}, {384, 1536}, {1536, 384}} {
					in, out := shape[0], shape[1]
					l, x := NewInt8(random(r, out, in), random(r, 1, out).Data, bits), random(r, rows, in)
					b.Run(fmt.Sprintf("%s/activations=%d/rows=%d/%dx%d", kernel, bits, rows, in, out), func(b *testing.B) {
						for b.Loop() {
							l.Of(x)
						}
						b.ReportMetric(float64(b.N)*float64(rows*in*out)/b.Elapsed().Seconds()/1e9, "GMAC/s")
					})
				}
			}
		}
		restore()
	}
}
