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

// The VNNI int8 kernel needs AVX-512's 32 registers and VNNI's dot
// products (Intel since 2019's Cascade Lake, AMD since Zen 4), and widens,
// narrows and masks with the BW, DQ and VL extensions every such processor
// has. HasAVX512 also says the operating system saves the 512-bit
// registers. Elsewhere the int8 products take the AVX2 kernel.
func vnniUsable() bool {
	x := cpu.X86
	return x.HasAVX512 && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL && x.HasAVX512VNNI
}

// int8Tile8x32, int8Tile4x32 and their 8-bit activations' int8Tile8x32u and int8Tile4x32u are in int8_amd64.s.
//
//go:noescape
func int8Tile8x32(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int)

//go:noescape
func int8Tile4x32(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int)

//go:noescape
func int8Tile8x32u(a *uint8, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, offset *int32, c *float32, ldc int)

//go:noescape
func int8Tile4x32u(a *uint8, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, offset *int32, c *float32, ldc int)

// int8Tile6x16 and int8Tile3x16, the AVX2 kernel's, are in int8_avx2_amd64.s.
//
//go:noescape
func int8Tile6x16(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int)

//go:noescape
func int8Tile3x16(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int)

// maxAbs16, quantise16 and quantiseBytes16 are in int8_amd64.s.
//
//go:noescape
func maxAbs16(x *float32, n int) float32

//go:noescape
func quantise16(dst *int16, x *float32, n int, inv float32)

//go:noescape
func quantiseBytes16(dst *uint8, x *float32, n int, inv float32)

// max8, expShift8 and scale8 are in softmax_amd64.s.
//
//go:noescape
func max8(x *float32, n int) float32

//go:noescape
func expShift8(x *float32, n int, top float32) float32

//go:noescape
func scale8(x *float32, n int, s float32)

// layerNorm8 is in layernorm_amd64.s.
//
//go:noescape
func layerNorm8(dst, src, scale, bias *float32, n int, eps float64)

// gelu8 is in gelu_amd64.s.
//
//go:noescape
func gelu8(x *float32, n int, table *float32)
