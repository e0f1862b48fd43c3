# CPU f32 convolution as implicit GEMM on the register-blocked FMA micro-kernels (mappings
# "avx512_fma", "avx2_fma" for conv workloads), and the bf16 convs of an X in the pair layout
# ("amx_bf16", "avx512_bf16", "avx512_bf16_channels").
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/conv_sketch.cc
  ${CMAKE_CURRENT_LIST_DIR}/conv_amx_sketch.cc
  ${CMAKE_CURRENT_LIST_DIR}/conv_bf16_sketch.cc
  ${CMAKE_CURRENT_LIST_DIR}/conv_bf16_channels_sketch.cc
  ${CMAKE_CURRENT_LIST_DIR}/conv_pairs.cc
  ${CMAKE_CURRENT_LIST_DIR}/conv_winograd_sketch.cc)
