# CUDA row-wise (softmax, layernorm, reduce_mean) and element-wise kernels.
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cuda_rows_elementwise.cc
  ${CMAKE_CURRENT_LIST_DIR}/cuda_rows_sketch.cc
  ${CMAKE_CURRENT_LIST_DIR}/cuda_rows_util.cc
  ${CMAKE_CURRENT_LIST_DIR}/elementwise_gen.cc
  ${CMAKE_CURRENT_LIST_DIR}/rows_emit.cc
  ${CMAKE_CURRENT_LIST_DIR}/rows_gen.cc)
