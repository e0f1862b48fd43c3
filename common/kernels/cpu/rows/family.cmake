# CPU row-wise kernels: softmax, layernorm, reduce_mean (mapping "vector").
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/norm_sketch.cc
  ${CMAKE_CURRENT_LIST_DIR}/row_sketch.cc
  ${CMAKE_CURRENT_LIST_DIR}/softmax_sketch.cc)
