// The parallel runtime generated CPU kernels call (gtco_parallel_for), named inside
// gtco::codegen; it lives in runtime/parallel.h so that exported artifacts share it.
#pragma once

#include "runtime/parallel.h"

namespace gtco::codegen {

using runtime::ParallelThreads;
using runtime::SetParallelThreads;
using runtime::ThreadPlacement;

}  // namespace gtco::codegen
