# CUDA f16/bf16 matmul: wmma m16n16k16 fragments.
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/generator.cc
  ${CMAKE_CURRENT_LIST_DIR}/sketch.cc)
