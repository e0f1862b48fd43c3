# CUDA f16/bf16 matmul: wgmma warpgroup MMA from 128-byte-swizzled shared memory (sm_90a).
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/generator.cc
  ${CMAKE_CURRENT_LIST_DIR}/sketch.cc)
