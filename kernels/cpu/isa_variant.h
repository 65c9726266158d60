// Included first by every kernel file that is compiled once per instruction-set level
// (kernels/CMakeLists.txt: frugal_cpu_variants) and by the headers private to those files.
//
// Such a file puts everything it defines in namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
// (baseline, avx2, avx512 or avx512_bf16), so that the copies compiled with different -march
// flags share no symbol: an inline function compiled for AVX-512 in one copy can never be the
// one the linker keeps for the AVX2 copy. Code inside finds its own level's functions first
// by ordinary name lookup and the public types (Conv2dParams, StridedLoop ...) in the
// enclosing namespace. The public function of the same name, which isa_dispatch.cpp defines,
// picks one copy per call from cpu_isa().
#pragma once

#ifndef FRUGAL_CPU_ISA
#error \
    "this file is compiled once per instruction-set level: kernels/CMakeLists.txt defines FRUGAL_CPU_ISA"
#endif
