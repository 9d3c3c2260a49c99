//go:build !purego

#include "textflag.h"

DATA layerNormOne<>+0(SB)/8, $1.0
GLOBL layerNormOne<>(SB), RODATA|NOPTR, $8

// HSUM leaves in X0 the sum of Y0's four float64 lanes s0..s3 as the Go
// adds them, (s0 + s1) + (s2 + s3).
#define HSUM VEXTRACTF128 $1, Y0, X1; VHADDPD X1, X0, X0; VPERMILPD $1, X0, X1; VADDSD X1, X0, X0

// func layerNorm8(dst, src, scale, bias *float32, n int, eps float64)
//
// One row of LayerNorm, n a positive multiple of 8, with LayerNorm's Go
// arithmetic to the bit: the four float64 sums s0..s3 (of every fourth
// value) in the lanes of one register, squares rounded before they are
// added (no fused multiply-add, as Go compiles it), each value normalised
// in float64, then scaled and shifted in float32. dst may be src.
TEXT ·layerNorm8(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ scale+16(FP), R8
	MOVQ bias+24(FP), R9
	MOVQ n+32(FP), CX
	SHRQ $2, CX // groups of four

	// The mean.
	MOVQ   SI, AX
	MOVQ   CX, DX
	VXORPD Y0, Y0, Y0

sumloop:
	VCVTPS2PD (AX), Y2
	VADDPD    Y2, Y0, Y0
	ADDQ      $16, AX
	DECQ      DX
	JNZ       sumloop
	HSUM
	MOVQ         n+32(FP), DX
	VCVTSI2SDQ   DX, X7, X7
	VDIVSD       X7, X0, X0
	VBROADCASTSD X0, Y4 // mean

	// The variance.
	MOVQ   SI, AX
	MOVQ   CX, DX
	VXORPD Y0, Y0, Y0

varloop:
	VCVTPS2PD (AX), Y2
	VSUBPD    Y4, Y2, Y2
	VMULPD    Y2, Y2, Y2
	VADDPD    Y2, Y0, Y0
	ADDQ      $16, AX
	DECQ      DX
	JNZ       varloop
	HSUM
	VDIVSD       X7, X0, X0
	VADDSD       eps+40(FP), X0, X0
	VSQRTSD      X0, X0, X0
	VMOVSD       layerNormOne<>(SB), X1
	VDIVSD       X0, X1, X1
	VBROADCASTSD X1, Y5 // 1/√(variance + eps)

	SHRQ $1, CX // groups of eight

normloop:
	VCVTPS2PD   (SI), Y2
	VCVTPS2PD   16(SI), Y3
	VSUBPD      Y4, Y2, Y2
	VSUBPD      Y4, Y3, Y3
	VMULPD      Y5, Y2, Y2
	VMULPD      Y5, Y3, Y3
	VCVTPD2PSY  Y2, X2
	VCVTPD2PSY  Y3, X3
	VINSERTF128 $1, X3, Y2, Y2
	VMULPS      (R8), Y2, Y2
	VADDPS      (R9), Y2, Y2
	VMOVUPS     Y2, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	ADDQ        $32, R8
	ADDQ        $32, R9
	DECQ        CX
	JNZ         normloop
	VZEROUPPER
	RET
