# CUDA f16/bf16 matmul: mma.sync m16n8k16 with ldmatrix fragments (sm_80+).
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/generator.cc
  ${CMAKE_CURRENT_LIST_DIR}/sketch.cc)
