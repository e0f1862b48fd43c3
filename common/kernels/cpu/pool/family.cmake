# CPU max / average pooling (mapping "vector"): vectorized over output columns.
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/pool_sketch.cc)
