# CUDA f32 convolution: implicit GEMM on the SIMT and TF32 matmul generators (B gathered from the
# image), and depthwise convolutions directly (the sliding-window kernel of cuda/pool).
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/conv_gemm.cc
  ${CMAKE_CURRENT_LIST_DIR}/depthwise.cc
  ${CMAKE_CURRENT_LIST_DIR}/generator.cc
  ${CMAKE_CURRENT_LIST_DIR}/sketch.cc)
