//go:build !purego

#include "textflag.h"

DATA layerNormOne<>+0(SB)/8, $1.0
GLOBL layerNormOne<>(SB), RODATA|NOPTR, $8

// func layerNorm8(dst, src, scale, bias *float32, n int, eps float64)
//
// One row of LayerNorm, n a positive multiple of 8, as LayerNorm's Go
// takes it: the mean and the variance summed in float64 (four lanes and
// two accumulators each), each value normalised in float64, then scaled
// and shifted in float32. dst may be src.
TEXT ·layerNorm8(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ scale+16(FP), R8
	MOVQ bias+24(FP), R9
	MOVQ n+32(FP), CX
	SHRQ $3, CX

	// The mean.
	MOVQ   SI, AX
	MOVQ   CX, DX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1

sumloop:
	VCVTPS2PD (AX), Y2
	VCVTPS2PD 16(AX), Y3
	VADDPD    Y2, Y0, Y0
	VADDPD    Y3, Y1, Y1
	ADDQ      $32, AX
	DECQ      DX
	JNZ       sumloop
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VPERMILPD    $1, X0, X1
	VADDSD       X1, X0, X0
	MOVQ         n+32(FP), DX
	VCVTSI2SDQ   DX, X7, X7
	VDIVSD       X7, X0, X0
	VBROADCASTSD X0, Y4 // mean

	// The variance.
	MOVQ   SI, AX
	MOVQ   CX, DX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1

varloop:
	VCVTPS2PD   (AX), Y2
	VCVTPS2PD   16(AX), Y3
	VSUBPD      Y4, Y2, Y2
	VSUBPD      Y4, Y3, Y3
	VFMADD231PD Y2, Y2, Y0
	VFMADD231PD Y3, Y3, Y1
	ADDQ        $32, AX
	DECQ        DX
	JNZ         varloop
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VPERMILPD    $1, X0, X1
	VADDSD       X1, X0, X0
	VDIVSD       X7, X0, X0
	VADDSD       eps+40(FP), X0, X0
	VSQRTSD      X0, X0, X0
	VMOVSD       layerNormOne<>(SB), X1
	VDIVSD       X0, X1, X1
	VBROADCASTSD X1, Y5 // 1/√(variance + eps)

normloop:
	VCVTPS2PD  (SI), Y2
	VCVTPS2PD  16(SI), Y3
	VSUBPD     Y4, Y2, Y2
	VSUBPD     Y4, Y3, Y3
	VMULPD     Y5, Y2, Y2
	VMULPD     Y5, Y3, Y3
	VCVTPD2PSY Y2, X2
	VCVTPD2PSY Y3, X3
	VINSERTF128 $1, X3, Y2, Y2
	VMULPS     (R8), Y2, Y2
	VADDPS     (R9), Y2, Y2
	VMOVUPS    Y2, (DI)
	ADDQ       $32, SI
	ADDQ       $32, DI
	ADDQ       $32, R8
	ADDQ       $32, R9
	DECQ       CX
	JNZ        normloop
	VZEROUPPER
	RET
