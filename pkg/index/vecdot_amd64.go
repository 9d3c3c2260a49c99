//go:build !purego

package index

import (
	"os"

	"golang.org/x/sys/cpu"
)

// dotKernel: dot products run on AVX2 and fused multiply-add
// (kernelUsable: every x86-64 processor since 2013-2015), unless
// HECTOR_KERNELS=portable asks for Go's arithmetic everywhere, as it does
// of the encoders'.
var (
	kernelUsable = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	dotKernel    = kernelUsable && os.Getenv("HECTOR_KERNELS") != "portable"
)

// dotFloat32Kernel and dotInt8Kernel are in vecdot_amd64.s: the dot
// product of n float32s at a and n at b, or n float32s at q and n int8s at
// v; n is a multiple of 8.
//
//go:noescape
func dotFloat32Kernel(a, b *float32, n int) float32

//go:noescape
func dotInt8Kernel(q *float32, v *byte, n int) float32
