//go:build !purego

#include "textflag.h"

// The softmax kernels, for AVX2 and FMA: eight values at a time, n a
// positive multiple of 8.

// func max8(x *float32, n int) float32
//
// The largest x[i], i < n.
TEXT ·max8(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	SHRQ    $3, CX
	VMOVUPS (SI), Y0

maxloop:
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	DECQ   CX
	JNZ    maxloop

	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

DATA expConst<>+0(SB)/4, $0xc2aeac4f
DATA expConst<>+4(SB)/4, $0x3fb8aa3b
DATA expConst<>+8(SB)/4, $0x3f317200
DATA expConst<>+12(SB)/4, $0x35bfbe8e
DATA expConst<>+16(SB)/4, $0x3f800000
DATA expConst<>+20(SB)/4, $0x3f000000
DATA expConst<>+24(SB)/4, $0x3e2aaaab
DATA expConst<>+28(SB)/4, $0x3d2aaaab
DATA expConst<>+32(SB)/4, $0x3c088889
DATA expConst<>+36(SB)/4, $0x3ab60b61
DATA expConst<>+40(SB)/4, $0x39500d01
GLOBL expConst<>(SB), RODATA|NOPTR, $44

// func expShift8(x *float32, n int, top float32) float32
//
// x[i] = e^(x[i]-top) for i < n, and returns their sum; x[i] ≤ top. It is
// Exp's arithmetic eight lanes wide: k = round(y·log₂e), r = y - k·ln2 in
// two parts, e^r by Taylor's series to r⁷/7!, times 2^k added into the
// exponent's field. y is held at -87.33654 and above, so that 2^k stays a
// normal number; e^y there is 1e-38, as good as Exp's 0 beside the row's
// largest, whose e^0 is 1.
TEXT ·expShift8(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	SHRQ         $3, CX
	VBROADCASTSS top+16(FP), Y4
	VBROADCASTSS expConst<>+0(SB), Y5   // -87.33654
	VBROADCASTSS expConst<>+4(SB), Y6   // log₂e
	VBROADCASTSS expConst<>+8(SB), Y7   // ln 2's first 16 bits: k·ln2Hi is exact
	VBROADCASTSS expConst<>+12(SB), Y8  // the rest of ln 2
	VBROADCASTSS expConst<>+16(SB), Y9  // 1
	VBROADCASTSS expConst<>+20(SB), Y10 // 1/2
	VBROADCASTSS expConst<>+24(SB), Y11 // 1/6
	VBROADCASTSS expConst<>+28(SB), Y12 // 1/24
	VBROADCASTSS expConst<>+32(SB), Y13 // 1/120
	VBROADCASTSS expConst<>+36(SB), Y14 // 1/720
	VBROADCASTSS expConst<>+40(SB), Y15 // 1/5040
	VXORPS       Y3, Y3, Y3

exploop:
	VMOVUPS      (SI), Y0
	VSUBPS       Y4, Y0, Y0
	VMAXPS       Y5, Y0, Y0
	VMULPS       Y6, Y0, Y1
	VROUNDPS     $0, Y1, Y1     // to the nearest, halves to even
	VFNMADD231PS Y7, Y1, Y0
	VFNMADD231PS Y8, Y1, Y0     // r
	VMOVAPS      Y15, Y2
	VFMADD213PS  Y14, Y0, Y2
	VFMADD213PS  Y13, Y0, Y2
	VFMADD213PS  Y12, Y0, Y2
	VFMADD213PS  Y11, Y0, Y2
	VFMADD213PS  Y10, Y0, Y2
	VFMADD213PS  Y9, Y0, Y2
	VFMADD213PS  Y9, Y0, Y2     // e^r
	VCVTPS2DQ    Y1, Y1
	VPSLLD       $23, Y1, Y1
	VPADDD       Y1, Y2, Y2     // × 2^k
	VMOVUPS      Y2, (SI)
	VADDPS       Y2, Y3, Y3
	ADDQ         $32, SI
	DECQ         CX
	JNZ          exploop

	VEXTRACTF128 $1, Y3, X0
	VADDPS       X0, X3, X3
	VPERMILPS    $0x4e, X3, X0
	VADDPS       X0, X3, X3
	VPERMILPS    $0xb1, X3, X0
	VADDPS       X0, X3, X3
	VMOVSS       X3, ret+24(FP)
	VZEROUPPER
	RET

// func scale8(x *float32, n int, s float32)
//
// x[i] *= s for i < n.
TEXT ·scale8(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	SHRQ         $3, CX
	VBROADCASTSS s+16(FP), Y1

scaleloop:
	VMULPS  (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	DECQ    CX
	JNZ     scaleloop
	VZEROUPPER
	RET
