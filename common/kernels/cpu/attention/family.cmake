# CPU fused attention (mapping "rows"): scores, mask, softmax and P.V in one kernel per head and
# query tile.
target_sources(gtco_kernels PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/attention_sketch.cc)
