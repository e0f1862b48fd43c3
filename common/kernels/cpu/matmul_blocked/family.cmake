# CPU f32 matmul, register-blocked FMA micro-kernels (mappings "avx512_fma", "avx2_fma").
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/matmul_blocked_lowering.cc
  ${CMAKE_CURRENT_LIST_DIR}/matmul_blocked_sketch.cc)
