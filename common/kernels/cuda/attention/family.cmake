# CUDA fused attention (flash attention, mapping "flash").
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/generator.cc
  ${CMAKE_CURRENT_LIST_DIR}/sketch.cc)
