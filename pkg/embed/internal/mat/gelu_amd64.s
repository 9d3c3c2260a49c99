//go:build !purego

#include "textflag.h"

DATA geluConst<>+0(SB)/4, $0x7fffffff  // |x|'s mask
DATA geluConst<>+4(SB)/4, $0x3e6d3388  // p/√2
DATA geluConst<>+8(SB)/4, $0x3e027906  // a1/2
DATA geluConst<>+12(SB)/4, $0xbe11a98e // a2/2
DATA geluConst<>+16(SB)/4, $0x3f35f0e3 // a3/2
DATA geluConst<>+20(SB)/4, $0xbf3a00e3 // a4/2
DATA geluConst<>+24(SB)/4, $0x3f07dc22 // a5/2
DATA geluConst<>+28(SB)/4, $0x3f800000 // 1
DATA geluConst<>+32(SB)/4, $0xbf000000 // -1/2
DATA geluConst<>+36(SB)/4, $0xc2aeac4f // -87.33654
DATA geluConst<>+40(SB)/4, $0x3fb8aa3b // log₂e
DATA geluConst<>+44(SB)/4, $0x3f317200 // ln 2's first 16 bits
DATA geluConst<>+48(SB)/4, $0x35bfbe8e // the rest of ln 2
DATA geluConst<>+52(SB)/4, $0x3f000000 // 1/2
DATA geluConst<>+56(SB)/4, $0x3e2aaaab // 1/6
DATA geluConst<>+60(SB)/4, $0x3d2aaaab // 1/24
DATA geluConst<>+64(SB)/4, $0x3c088889 // 1/120
DATA geluConst<>+68(SB)/4, $0x3ab60b61 // 1/720
DATA geluConst<>+72(SB)/4, $0xc1000000 // -8
GLOBL geluConst<>(SB), RODATA|NOPTR, $76

// HORNER: acc = acc·x + the constant at offset c.
#define HORNER(c, x, acc) VBROADCASTSS geluConst<>+c(SB), Y6; VFMADD213PS Y6, x, acc

// func gelu8(x *float32, n int)
//
// GELU eight lanes wide, n a positive multiple of 8: x·Φ(x), with
// Φ(-|x|) = erfc(|x|/√2)/2 by Abramowitz and Stegun's 7.1.26 (an error
// under 1.5e-7): t = 1/(1 + p·|x|/√2), erfc = t·(a1 + a2·t + … + a5·t⁴)·
// e^(-x²/2), the exponential as expShift8 takes it (e^r by Taylor's series
// to r⁶/6!, the argument held at -87.33654 and above). Arithmetic only:
// the table GELU interpolates in took two gathers a block, from a table
// larger than the first-level cache. At -8 and below, 0 (and -Inf's 0,
// not NaN); NaN stays NaN; +Inf stays +Inf.
TEXT ·gelu8(SB), NOSPLIT, $0-16
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	SHRQ         $3, CX
	VBROADCASTSS geluConst<>+0(SB), Y15
	VBROADCASTSS geluConst<>+4(SB), Y14
	VBROADCASTSS geluConst<>+28(SB), Y13 // 1
	VBROADCASTSS geluConst<>+32(SB), Y12
	VBROADCASTSS geluConst<>+36(SB), Y11
	VBROADCASTSS geluConst<>+40(SB), Y10
	VBROADCASTSS geluConst<>+44(SB), Y9
	VBROADCASTSS geluConst<>+48(SB), Y8
	VBROADCASTSS geluConst<>+72(SB), Y7

geluloop:
	VMOVUPS     (SI), Y0
	VANDPS      Y15, Y0, Y1
	VFMADD213PS Y13, Y14, Y1 // 1 + p·|x|/√2
	VDIVPS      Y1, Y13, Y1  // t

	VBROADCASTSS geluConst<>+24(SB), Y2
	HORNER(20, Y1, Y2)
	HORNER(16, Y1, Y2)
	HORNER(12, Y1, Y2)
	HORNER(8, Y1, Y2)
	VMULPS       Y1, Y2, Y2 // erfc's polynomial, halved

	VMULPS       Y0, Y0, Y3
	VMULPS       Y12, Y3, Y3 // y = -x²/2
	VMAXPS       Y11, Y3, Y3
	VMULPS       Y10, Y3, Y4
	VROUNDPS     $0, Y4, Y4  // k
	VFNMADD231PS Y9, Y4, Y3
	VFNMADD231PS Y8, Y4, Y3  // r
	VBROADCASTSS geluConst<>+68(SB), Y5
	HORNER(64, Y3, Y5)
	HORNER(60, Y3, Y5)
	HORNER(56, Y3, Y5)
	HORNER(52, Y3, Y5)
	VFMADD213PS  Y13, Y3, Y5
	VFMADD213PS  Y13, Y3, Y5 // e^r
	VCVTPS2DQ    Y4, Y4
	VPSLLD       $23, Y4, Y4
	VPADDD       Y4, Y5, Y5  // e^y

	VMULPS    Y5, Y2, Y2     // Φ(-|x|)
	VSUBPS    Y2, Y13, Y3    // Φ(|x|)
	VBLENDVPS Y0, Y2, Y3, Y3 // Φ(x): the first where x's sign is set
	VMULPS    Y3, Y0, Y3
	VCMPPS    $0x12, Y7, Y0, Y4 // x ≤ -8
	VANDNPS   Y3, Y4, Y3
	VMOVUPS   Y3, (SI)
	ADDQ      $32, SI
	DECQ      CX
	JNZ       geluloop
	VZEROUPPER
	RET
