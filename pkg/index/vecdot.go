package index

import (
	"encoding/binary"
	"math"
)

// similarity is the cosine of the unit vector q and a unit vector kept as
// encodeVector keeps it (int8 and a scale), or in float32 as files written
// before int8 keep theirs, and whether b holds a vector of q's length (the
// two layouts' lengths never meet). The int8 values are multiplied as they
// are read, never widened into a vector first: a search reads every one of
// the owner's vectors, and this is most of what it costs.
func similarity(q []float32, b []byte) (float32, bool) {
	switch len(b) {
	case 4 + len(q):
		scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
		return dotInt8(q, b[4:]) * scale, true
	case 4 * len(q):
		var s float32
		for i, x := range q {
			s += x * math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return s, true
	}
	return 0, false
}

// dot is the dot product of two vectors of one length.
func dot(a, b []float32) float32 { return kernelThenGo(dotKernel, a, b, dotFloat32Kernel, dotGo) }

// dotInt8 is the dot product of q and the int8 values v holds (as many).
func dotInt8(q []float32, v []byte) float32 {
	return kernelThenGo(dotKernel, q, v, dotInt8Kernel, dotInt8Go)
}

// kernelThenGo is a dot product on the processor's vector instructions
// (kernel, for a multiple of 8 values) when onKernel (dotKernel: where it
// has them), in Go (inGo) otherwise and for what is left.
func kernelThenGo[T float32 | byte](onKernel bool, a []float32, b []T, kernel func(*float32, *T, int) float32, inGo func([]float32, []T) float32) float32 {
	b = b[:len(a)]
	var s float32
	n := 0
	if onKernel {
		if n = len(a) &^ 7; n > 0 {
			s = kernel(&a[0], &b[0], n)
		}
	}
	return s + inGo(a[n:], b[n:])
}

// dotGo is dot in Go: four sums, so the additions need not wait for each
// other.
func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// dotInt8Go is dotInt8 in Go, as dotGo.
func dotInt8Go(q []float32, v []byte) float32 {
	v = v[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		s0 += q[i] * float32(int8(v[i]))
		s1 += q[i+1] * float32(int8(v[i+1]))
		s2 += q[i+2] * float32(int8(v[i+2]))
		s3 += q[i+3] * float32(int8(v[i+3]))
	}
	for ; i < len(q); i++ {
		s0 += q[i] * float32(int8(v[i]))
	}
	return s0 + s1 + s2 + s3
}
