package mat

import (
	"math"
	"math/rand/v2"
	"testing"
)

// GELU's table is within 1e-6 of the exact function everywhere activations
// go, and exact (x or 0) past the table's edges, with the kernel and
// without; NaN and the infinities land in every lane of a block and in the
// tail.
func TestGELU(t *testing.T) {
	withKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		xs := []float32{0, -0, 1, -1, geluEdge, -geluEdge, geluEdge - 1e-6, -geluEdge + 1e-6, 100, -100, 7.9999, -7.9999, math.MaxFloat32, -math.MaxFloat32}
		for range 100000 {
			xs = append(xs, float32(r.NormFloat64()*4))
		}
		for i := range 9 {
			xs[len(xs)-1-i*12] = float32(math.NaN())
			xs[len(xs)-2-i*12] = float32(math.Inf(1))
			xs[len(xs)-3-i*12] = float32(math.Inf(-1))
		}
		got := append([]float32(nil), xs...)
		GELU(got)
		for i, x := range xs {
			want := GELUExact(float64(x))
			if math.IsInf(float64(x), -1) {
				want = 0 // x·Φ(x) tends to 0
			}
			if math.IsNaN(want) != math.IsNaN(float64(got[i])) {
				t.Fatalf("GELU(%g) = %g, want %g", x, got[i], want)
			}
			if d := math.Abs(float64(got[i]) - want); !math.IsNaN(want) && d > 1e-6*max(1, math.Abs(want)) {
				t.Fatalf("GELU(%g) = %g, want %g", x, got[i], want)
			}
		}
	})
}

func FuzzGELU(f *testing.F) {
	f.Add(float32(0.5))
	f.Fuzz(func(t *testing.T, x float32) {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return
		}
		got := []float32{x}
		GELU(got)
		if want := GELUExact(float64(x)); math.Abs(float64(got[0])-want) > 1e-6*max(1, math.Abs(want)) {
			t.Fatalf("GELU(%g) = %g, want %g", x, got[0], want)
		}
	})
}

// Exp agrees with math.Exp to a few units in the last place over the
// whole range float32 holds, and at its edges.
func TestExp(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	xs := []float32{0, 1, -1, 88.7, 88.72, -87.33, -87.3, -87.34, -100, 100, 1e-8, -1e-8}
	for range 200000 {
		xs = append(xs, float32(r.Float64()*176-87.3))
	}
	for _, x := range xs {
		checkExp(t, x)
	}
	if got := Exp(float32(math.NaN())); !math.IsNaN(float64(got)) {
		t.Errorf("Exp(NaN) = %g", got)
	}
}

func checkExp(t *testing.T, x float32) {
	t.Helper()
	want := math.Exp(float64(x))
	got := float64(Exp(x))
	switch {
	case want > math.MaxFloat32:
		if !math.IsInf(got, 1) {
			t.Fatalf("Exp(%g) = %g, want +Inf", x, got)
		}
	case want < 0x1p-126: // under float32's full precision: 0 or near it
		if got > 0x1p-126 {
			t.Fatalf("Exp(%g) = %g, want about %g", x, got, want)
		}
	case math.Abs(got-want) > 3e-7*want:
		t.Fatalf("Exp(%g) = %g, want %g (off by %.2g of it)", x, got, want, math.Abs(got-want)/want)
	}
}

func FuzzExp(f *testing.F) {
	f.Add(float32(-3.5))
	f.Fuzz(func(t *testing.T, x float32) {
		if !math.IsNaN(float64(x)) {
			checkExp(t, x)
		}
	})
}

// BenchmarkGELU: one feed-forward layer's activations of a 128-piece text.
//
//	go test -run '^$' -bench GELU ./pkg/embed/internal/mat
func BenchmarkGELU(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 128*1536)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 2)
	}
	row := make([]float32, len(x))
	benchKernels(b, func(b *testing.B) {
		for b.Loop() {
			copy(row, x)
			GELU(row)
		}
	})
}
