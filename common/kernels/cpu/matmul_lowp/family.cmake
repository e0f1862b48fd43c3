# CPU low-precision matmul: bf16 on avx512_bf16, u8/s8 on avx512_vnni.
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/matmul_lowp_lowering.cc
  ${CMAKE_CURRENT_LIST_DIR}/matmul_lowp_sketch.cc)
