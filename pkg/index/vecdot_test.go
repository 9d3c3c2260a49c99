package index

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The kernels and Go give the same dot products, whatever the length (a
// kernel takes 32 values a step, then 8; Go the rest) and the values,
// within float32's rounding of sums taken in another order. The kernels are
// tested wherever the processor has them, HECTOR_KERNELS=portable or not.
func TestDotKernelsAgreeWithGo(t *testing.T) {
	if !kernelUsable {
		t.Skip("n/a: this processor has no AVX2 and FMA, which the dot product kernels need")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 200 {
		q, b, v := make([]float32, n), make([]float32, n), make([]byte, n)
		for i := range q {
			q[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			v[i] = byte(r.IntN(256))
		}
		if n > 0 {
			v[r.IntN(n)] = 0x80 // -128, the one int8 without an opposite
		}
		got, want := kernelThenGo(true, q, b, dotFloat32Kernel, dotGo), dotGo(q, b)
		var size float64
		for i := range q {
			size += math.Abs(float64(q[i] * b[i]))
		}
		if math.Abs(float64(got-want)) > 1e-5*size+1e-6 {
			t.Fatalf("length %d: the kernel's dot product is %v, Go's %v", n, got, want)
		}
		checkDotInt8(t, q, v)
	}
}

// FuzzDotInt8 checks the kernel against Go on any bytes: the vector's, and
// the query's as float32s.
func FuzzDotInt8(f *testing.F) {
	f.Add([]byte{1, 2, 3}, []byte{0x80, 0x7f, 0})
	f.Fuzz(func(t *testing.T, qb, v []byte) {
		if !kernelUsable {
			t.Skip("n/a: this processor has no AVX2 and FMA, which the dot product kernels need")
		}
		n := min(len(qb), len(v))
		q := make([]float32, n)
		for i := range q {
			q[i] = float32(int8(qb[i])) / 16 // finite: the sums are compared
		}
		checkDotInt8(t, q, v[:n])
	})
}

func checkDotInt8(t *testing.T, q []float32, v []byte) {
	t.Helper()
	got, want := kernelThenGo(true, q, v, dotInt8Kernel, dotInt8Go), dotInt8Go(q, v)
	var size float64 // what rounding is relative to
	for i := range q {
		size += math.Abs(float64(q[i]) * float64(int8(v[i])))
	}
	if math.Abs(float64(got-want)) > 1e-5*size+1e-6 {
		t.Fatalf("length %d: the kernel's dot product is %v, Go's %v", len(q), got, want)
	}
	if dotKernel && dotInt8(q, v) != got {
		t.Fatalf("length %d: dotInt8 is %v, its kernel and Go %v", len(q), dotInt8(q, v), got)
	}
}
