// Fixed workloads and machine shared by the fuzz targets and the seed-corpus generator.
#pragma once

#include <vector>

#include "common/ir/workload.h"
#include "common/target/target.h"

namespace gtco::fuzz {

/// One workload of every class the sketches handle: f32 matmuls (plain, transposed, batched
/// with a bias+GELU epilogue, odd sizes), bf16 and 8-bit integer matmuls, softmax, layernorm,
/// reduce_mean and an element-wise workload. Every one passes Validate().
std::vector<ir::Workload> FixedWorkloads();

/// A 4-core AVX-512 machine with avx512_bf16 and avx512_vnni, so that every mapping applies.
target::HardwareInfo FuzzMachine();

}  // namespace gtco::fuzz
