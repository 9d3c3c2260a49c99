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
	MOVL         $0xc2aeac4f, AX // -87.33654
	VMOVD        AX, X5
	VPBROADCASTD X5, Y5
	MOVL         $0x3fb8aa3b, AX // log₂e
	VMOVD        AX, X6
	VPBROADCASTD X6, Y6
	MOVL         $0x3f317200, AX // ln 2's first 16 bits: k·ln2Hi is exact
	VMOVD        AX, X7
	VPBROADCASTD X7, Y7
	MOVL         $0x35bfbe8e, AX // the rest of ln 2
	VMOVD        AX, X8
	VPBROADCASTD X8, Y8
	MOVL         $0x3f800000, AX // 1
	VMOVD        AX, X9
	VPBROADCASTD X9, Y9
	MOVL         $0x3f000000, AX // 1/2
	VMOVD        AX, X10
	VPBROADCASTD X10, Y10
	MOVL         $0x3e2aaaab, AX // 1/6
	VMOVD        AX, X11
	VPBROADCASTD X11, Y11
	MOVL         $0x3d2aaaab, AX // 1/24
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12
	MOVL         $0x3c088889, AX // 1/120
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	MOVL         $0x3ab60b61, AX // 1/720
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x39500d01, AX // 1/5040
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
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
