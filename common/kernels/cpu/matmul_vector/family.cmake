# CPU f32 matmul, plain vector loop nest (mapping "vector"), and the replay-only mm_tiled/v1.
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/matmul_sketch.cc
  ${CMAKE_CURRENT_LIST_DIR}/matmul_vector_sketch.cc)
