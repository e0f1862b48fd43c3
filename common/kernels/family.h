// The vocabulary a kernel family speaks: the sketch, mapping and plan interfaces of
// common/schedule, its loop-IR lowering helpers, and the CUDA C emission helpers of
// common/codegen/cuda, named inside gtco::kernels. Every file under common/kernels/<target>/
// <family>/ includes this header first.
#pragma once

#include <cstdint>

#include "common/codegen/cuda/cuda_source.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/epilogue.h"
#include "common/schedule/lower_util.h"
#include "common/schedule/mapping.h"
#include "common/schedule/sketch.h"
#include "common/schedule/space.h"
#include "common/schedule/trace.h"

namespace gtco::kernels {

/// ceil(a / b) for a >= 0, b > 0.
inline constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
/// `a` rounded up to a multiple of `multiple` (> 0).
inline constexpr int64_t RoundUp(int64_t a, int64_t multiple) {
  return CeilDiv(a, multiple) * multiple;
}
/// The smallest power of two >= value (1 for value <= 1).
inline constexpr int64_t PowerOfTwoCeil(int64_t value) {
  int64_t power = 1;
  while (power < value) power *= 2;
  return power;
}

// Sketches, mappings and traces.
using schedule::Knob;
using schedule::KnobValues;
using schedule::LoopSketch;
using schedule::MappingSketch;
using schedule::MappingVerdict;
using schedule::MissingCpuFeatures;
using schedule::NonF32Operands;
using schedule::PruneStats;
using schedule::SearchSpace;
using schedule::Sketch;
using schedule::Trace;
using schedule::VectorMapping;

// CUDA plans and the GPU resource model.
using schedule::CudaBlocksPerSm;
using schedule::CudaGenerator;
using schedule::CudaMappingSketch;
using schedule::CudaPlan;
using schedule::CudaResourceRule;
using schedule::CudaSketch;
using schedule::MissingCudaArch;

// Loop-IR lowering helpers (CPU families).
using schedule::AlignToOutput;
using schedule::CheckOneOf;
using schedule::CheckRange;
using schedule::ConvEpilogueInputShape;
using schedule::EmitVectorRange;
using schedule::EpilogueBuilder;
using schedule::InputName;
using schedule::KernelParams;
using schedule::kOutputName;
using schedule::LoopOrSkip;
using schedule::LowerEwOp;
using schedule::NumElements;
using schedule::Prefer;
using schedule::RangeBody;
using schedule::UnrolledSteps;
using schedule::VectorGroupFits;
using schedule::VectorWidths;
using schedule::VectorWidthsWidestFirst;

// CUDA C emission helpers (CUDA families).
using codegen::cuda::EmitEpilogue;
using codegen::cuda::KernelSignature;
using codegen::cuda::LoadAsFloat;
using codegen::cuda::Prelude;
using codegen::cuda::StorageType;
using codegen::cuda::StoreFromFloat;

}  // namespace gtco::kernels
