# What the CUDA matmul families share: operand layouts, tensor-core tilings, kernel skeletons.
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cuda_matmul_common.cc
  ${CMAKE_CURRENT_LIST_DIR}/cuda_matmul_tc.cc
  ${CMAKE_CURRENT_LIST_DIR}/cuda_matmul_tensor_core.cc
  ${CMAKE_CURRENT_LIST_DIR}/matmul_kernel_util.cc
  ${CMAKE_CURRENT_LIST_DIR}/matmul_tc_emit.cc
  ${CMAKE_CURRENT_LIST_DIR}/matmul_tensor_core_kernel.cc)
