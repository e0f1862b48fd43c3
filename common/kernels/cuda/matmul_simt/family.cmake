# CUDA f32 matmul on SIMT FMA.
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/generator.cc
  ${CMAKE_CURRENT_LIST_DIR}/sketch.cc)
