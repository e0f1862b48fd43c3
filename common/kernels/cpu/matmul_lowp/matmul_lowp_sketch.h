// Low-precision matmul mappings on AVX-512: "avx512_bf16" (vdpbf16ps on bf16 x bf16 matmuls)
// and "avx512_vnni" (vpdpbusd on 8-bit integer matmuls, ONNX MatMulInteger). Each is a sketch
// plus a verdict saying whether it applies to a (workload, machine) pair and why not.
//
// When they apply:
//  - avx512_bf16: a matmul with bf16 A and B (f32 output with any epilogue, or bf16 output),
//    A not transposed, on a CPU with avx512f and avx512_bf16.
//  - avx512_vnni: a matmul with u8|i8 A and u8|i8 B, per-tensor zero points (A's constant or
//    read at run time), an i32 output or an f32 one with any epilogue (dynamic quantization's
//    scale and bias), A not transposed, on a CPU with avx512f and avx512_vnni.
//  - avx2_int8: the same integer matmuls on a CPU with avx2 and fma but without avx512_vnni (Zen
//    3, Haswell..Ice Lake clients): the same loop nest on 8-lane vectors, each u8 x s8 quad a
//    widened, exact multiply-add (no vpmaddubsw saturation).
//  - amx_bf16 / amx_int8: the same matmuls on Intel AMX tiles (tdpbf16ps; tdpbusd / tdpbssd /
//    tdpbsud / tdpbuud by the signedness of A and B, so no sign shifts), on a CPU with avx512f,
//    amx_tile and amx_bf16 / amx_int8 whose kernel grants the tile state; A is read in place in
//    16-row tiles, so K must be a multiple of 32 (bf16) / 64 (int8) and M >= 16 (the last row
//    tile's A tiles start at min(row, M - 16)).
//  - Any M, N, K >= 1 (but see AMX): K is padded to a multiple of 2 (bf16) / 4 (int8) in the
//    packed B panel, N to the column tile, M by clamped row tiles; the smallest B panel (16
//    columns of K) must fit the 2 MiB panel limit (K <= 65536 for bf16, 131072 for int8).
#pragma once

#include <string>

#include "common/ir/workload.h"
#include "common/kernels/family.h"
#include "common/schedule/mapping.h"
#include "common/schedule/sketch.h"
#include "common/target/target.h"

namespace gtco::kernels {

/// Mapping names (the registry's keys).
inline constexpr char kAvx512Bf16Mapping[] = "avx512_bf16";
inline constexpr char kAvx512VnniMapping[] = "avx512_vnni";
inline constexpr char kAvx2Int8Mapping[] = "avx2_int8";
inline constexpr char kAmxBf16Mapping[] = "amx_bf16";
inline constexpr char kAmxInt8Mapping[] = "amx_int8";

/// Verdict of the "avx512_bf16" mapping (the same as Avx512Bf16MatMulMapping().Explain, and
/// also defined for workloads the mapping does not consider, with the reason).
MappingVerdict Avx512Bf16Verdict(const ir::Workload& w, const target::HardwareInfo& hw);
/// Verdict of the "avx512_vnni" mapping.
MappingVerdict Avx512VnniVerdict(const ir::Workload& w, const target::HardwareInfo& hw);
/// Verdict of the "avx2_int8" mapping (applies only where avx512_vnni does not).
MappingVerdict Avx2Int8Verdict(const ir::Workload& w, const target::HardwareInfo& hw);

/// Verdicts of the "amx_bf16" and "amx_int8" mappings.
MappingVerdict AmxBf16Verdict(const ir::Workload& w, const target::HardwareInfo& hw);
MappingVerdict AmxInt8Verdict(const ir::Workload& w, const target::HardwareInfo& hw);

/// "mm_avx512_bf16/v2": knobs mr, nr, nc, mc, par, unroll_k, pack_b (2: B read pre-packed in
/// the AMX sketches' layout of 16-column tiles, as a model's weights are exported; 1: each task
/// packs its panel). AppliesTo checks the workload part of Avx512Bf16Verdict only (Sketch has no
/// hardware); gate on the verdict before using it.
const LoopSketch& MatMulBf16Sketch();
/// "mm_avx512_vnni/v2": same knobs and caveat, for Avx512VnniVerdict (pack_b 2 not for u8 B,
/// which the kernel reads as s8 B - 128).
const LoopSketch& MatMulVnniSketch();
/// "mm_avx512_bf16/v1" / "mm_avx512_vnni/v1": the sketches before pack_b (B packed in every
/// call), registered replay-only so that stored traces still replay.
const schedule::Sketch& MatMulBf16SketchV1();
const schedule::Sketch& MatMulVnniSketchV1();
/// "mm_avx2_int8/v1": knobs mr, nr, nc, mc, par, unroll_k, 8 lanes, wide dot products, for
/// Avx2Int8Verdict.
const LoopSketch& MatMulAvx2Int8Sketch();
/// "mm_amx_bf16/v2" / "mm_amx_int8/v2": same knobs (mr, nr count 16-row A tiles and 16-column B
/// tiles, mr * nr + mr + nr <= 8; unroll_k is 1) plus pack_b and kc (K elements per K block,
/// K itself for none), for AmxBf16Verdict / AmxInt8Verdict.
const LoopSketch& MatMulAmxBf16Sketch();
const LoopSketch& MatMulAmxInt8Sketch();
/// "mm_amx_bf16/v1" / "mm_amx_int8/v1": the sketches before kc (the whole K per block), which
/// no mapping offers any more; registered replay-only so that stored traces still replay.
const schedule::Sketch& MatMulAmxBf16SketchV1();
const schedule::Sketch& MatMulAmxInt8SketchV1();

// The registry entries (declared in mapping.h through mappings.def): Avx512Bf16MatMulMapping()
// Avx512VnniMatMulMapping(), Avx2Int8MatMulMapping(), AmxBf16MatMulMapping() and
// AmxInt8MatMulMapping(), named kAvx512Bf16Mapping / kAvx512VnniMapping / kAvx2Int8Mapping /
// kAmxBf16Mapping / kAmxInt8Mapping.

}  // namespace gtco::kernels
