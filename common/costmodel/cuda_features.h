// Features of CUDA programs for the cost model, from their launch plan (the CUDA sketches have no
// loop-IR form).
#pragma once

#include <string>
#include <vector>

#include "common/costmodel/cost_model.h"
#include "common/ir/workload.h"
#include "common/schedule/cuda_sketch.h"
#include "common/target/target.h"

namespace gtco::costmodel {

/// Work, traffic, launch geometry, occupancy, waves and tile efficiency of `plan` for `w` on
/// `hw` (a CUDA HardwareInfo; zero limits are treated as unknown). Deterministic. The vector has
/// FeatureNames().size() entries (the cost model's fixed width; models are per target, so the
/// CPU and CUDA layouts never mix): the plan features first, zeros after.
Features ExtractCudaFeatures(const ir::Workload& w, const schedule::CudaPlan& plan,
                             const target::HardwareInfo& hw);

}  // namespace gtco::costmodel
