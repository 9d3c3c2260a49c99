//go:build !purego

package mat

import "golang.org/x/sys/cpu"

// The amd64 kernel needs AVX2's 256-bit registers and fused multiply-add:
// every x86-64 processor since 2013-2015 has both.
const haveKernel = true

func kernelUsable() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// tile6x16 is in kernel_amd64.s.
//
//go:noescape
func tile6x16(a *float32, lda int, b *float32, k int, bias *float32, c *float32, ldc int)
