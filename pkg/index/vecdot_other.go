//go:build !amd64 || purego

package index

// No kernel here: dot products run in Go.
const kernelUsable, dotKernel = false, false

func dotInt8Kernel(q *float32, v *byte, n int) float32 {
	panic("index: no dot product kernel on this machine")
}

func dotFloat32Kernel(a, b *float32, n int) float32 {
	panic("index: no dot product kernel on this machine")
}
