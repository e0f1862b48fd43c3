# CPU element-wise kernels: vectorized loops over broadcasting operands (mapping "vector").
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/elementwise_sketch.cc)
