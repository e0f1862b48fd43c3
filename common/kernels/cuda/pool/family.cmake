# CUDA max / average pooling, and the sliding-window kernel it shares with the depthwise
# convolutions of cuda/conv.
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/sketch.cc
  ${CMAKE_CURRENT_LIST_DIR}/window_kernel.cc)
