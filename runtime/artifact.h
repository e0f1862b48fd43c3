// The exported-model artifact (.gtco): one file holding a manifest (JSON), the model's kernels
// compiled ahead of time (CPU: into a shared object; CUDA: cubins, one per kernel plus one of
// the data-movement kernels, back to back), and the weights, each section checksummed.
//
// Layout (little-endian): a 128-byte header
//   "GTCOART1" | u64 manifest_offset, manifest_bytes, code_offset, code_bytes, weights_offset,
//   weights_bytes | 32-byte SHA-256 of the manifest | zero padding,
// then the manifest, the code (64-byte aligned) and the weights (4096-byte aligned, so that a
// mapped artifact serves them in place). The manifest carries the SHA-256 of the code and of the
// weights. This header is the runtime's only format dependency: it links nothing of the farm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gtco::runtime {

/// Element types of artifact tensors ("f32", "bf16", "f16", "i8", "u8", "i32", "i64", "bool").
enum class ElemType { kF32, kBF16, kF16, kI8, kU8, kI32, kI64, kBool };
const char* ElemTypeName(ElemType type);
absl::StatusOr<ElemType> ParseElemType(const std::string& name);
int64_t ElemSize(ElemType type);

/// One tensor of the model. Weights live in the weights section at `weight_offset`; every other
/// tensor lives in a storage of the per-run arena (several tensors share one storage when one is
/// a reshape of another).
struct TensorSpec {
  std::string name;
  ElemType dtype = ElemType::kF32;
  std::vector<int64_t> shape;
  bool weight = false;
  int64_t weight_offset = 0;  ///< weights only
  int storage = -1;           ///< non-weights: index into Manifest::storages

  int64_t NumElements() const;
  int64_t Bytes() const { return NumElements() * ElemSize(dtype); }
};

/// A region of the arena (64-byte aligned offset).
struct StorageSpec {
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// One step of the run, in order. Ops:
///   "kernel"    kernels[kernel](inputs..., outputs[0]) (args in the workload's order)
///   "transpose" params = perm
///   "gather"    inputs {data, indices (i64 or i32)}, params = {axis}
///   "slice"     params = {start, step} per input dim (the output shape gives the counts)
///   "strided"   params = {base, stride per output dim}: out[i] = in[base + sum_d i_d * stride_d]
///               (a slice, reshape and transpose of one tensor in one copy)
///   "concat"    params = {axis}
///   "cast"      outputs[0] = inputs[0] converted (to f32, f32 -> bf16, or the same type)
///   "expand"    inputs[0] broadcast (numpy rules) to the output shape
///   "equal"     inputs {a, b} of one type, broadcast; a bool output
///   "where"     inputs {cond (bool), x, y}, broadcast; out = cond ? x : y
///   "copy"      outputs[0] = inputs[0] (same bytes)
///   "split_bf16x3"  f32 [..., K] -> bf16 [..., 3K], per row [hi | lo | hi] (hi: the value
///               rounded to bf16, lo: the rest rounded to bf16; --precision bf16x3's operands)
///   "split_bf16x3_pairs"  the same split of an image f32 [N, C, H, W] along its channels, [hi,
///               lo, hi] (3C channels), written in the AMX conv's zero-padded pair layout
///               (ir/conv.h): bf16 [N, 3C/2 + T, P, 2], each pair of channels interleaved, each
///               plane the image padded by params = {top, left, bottom, right} zero pixels ((H +
///               top + bottom) x (W + left + right) <= P), zeros after it, then T zero planes;
///               params {top, left, bottom, right, stride_h, stride_w} store the padded image
///               as its stride phases
///   "cast_bf16_pairs"  the same layout of an image f32 [N, C, H, W] cast to bf16 (no split: C
///               channels, bf16 [N, C/2 + T, P, 2]; --precision bf16's convs)
///   "dynamic_quantize"  ONNX DynamicQuantizeLinear: inputs {x (f32)}, outputs {y (u8), scale
///               (f32, one element), zero point (u8, one element)}
///   "dequantize" ONNX DequantizeLinear: inputs {x (u8, i8 or i32), scale (f32)[, zero point (x's
///               type)]}, params = {axis}: -1 per tensor (one scale), else one scale per entry
///               of that axis; out = (x - zero point) * scale in f32
///   "fake_quantize"  QuantizeLinear then DequantizeLinear of the same scale and zero point:
///               inputs {x (f32), scale (f32)[, zero point (u8 or i8)]}, params = {axis, signed
///               (1: i8, 0: u8)}; out (f32) = (saturate(round-half-even(x / scale) + zero point)
///               - zero point) * scale
///   "quantize"  ONNX QuantizeLinear: inputs {x (f32), scale (f32)[, zero point (u8 or i8, the
///               output's type)]}, params = {axis} as "dequantize"; out = saturate(round-half-even(
///               x / scale) + zero point)
///   "reference" a fallback step: the ONNX node in `reference` (an op without a kernel family)
///               run by the reference op library (runtime/reference_ops.h) on its inputs (an
///               empty optional input has index -1), writing every output
struct StepSpec {
  std::string op;
  std::string node;  ///< the graph node(s) it computes, for errors and profiles
  std::vector<int> inputs;
  std::vector<int> outputs;
  int kernel = -1;
  std::vector<int64_t> params;
  std::string reference;  ///< "reference" steps: the node, as reference::NodeToJson writes it
};

/// One compiled kernel and where its schedule came from.
struct KernelSpec {
  std::string entry;  ///< CPU: symbol in the shared object, void entry(void** args);
                      ///< CUDA: the __global__ function in its cubin
  std::string workload_key;
  std::string description;
  std::string mapping;
  std::string trace;     ///< the schedule trace it was compiled from
  bool tuned = false;    ///< false: the default schedule (no record)
  std::string hardware;  ///< tuned: the hardware the record was measured on
  std::string worker;
  double median_seconds = 0.0;
  /// The workload's operations and the bytes it reads and writes once each (its minimum
  /// traffic), for profiles against the machine's peak; 0 in artifacts written before them.
  int64_t flops = 0, min_bytes = 0;
  // CUDA only: the kernel's cubin (a slice of the code section) and its launch.
  int64_t cubin_offset = 0, cubin_bytes = 0;
  std::vector<int64_t> grid = {1, 1, 1};   ///< blocks in x, y, z
  std::vector<int64_t> block = {1, 1, 1};  ///< threads in x, y, z
  int64_t shared_bytes = 0;                ///< dynamic shared memory per block
};

/// The whole-model check the exporter ran before it wrote the artifact: the artifact and the
/// reference interpreter of the original ONNX graph on the same inputs.
struct VerificationSpec {
  std::string status;  ///< "passed" or "skipped" ("" in artifacts written before the check)
  std::string reason;  ///< why it was skipped
  uint64_t seed = 0;   ///< of the random inputs
  int input_sets = 0;  ///< random sets plus those the user gave
  std::string rule;    ///< the tolerance rule, in words
  struct Output {
    std::string name;
    double max_error = 0;  ///< max |artifact - reference| / max |reference|, worst input set
    double tolerance = 0;
  };
  std::vector<Output> outputs;
};

struct Manifest {
  std::string format = "gtco-artifact/1";
  std::string model;
  std::string target = "cpu";  ///< "cpu" (code: a shared object) or "cuda" (cubins)
  std::string cpu;             ///< the CPU the code was compiled for (LLVM name)
  /// CUDA: the architecture of every cubin ("sm_90"), and the cubin of the data-movement
  /// kernels (runtime/cuda_steps.h) in the code section.
  std::string cuda_arch;
  int64_t data_cubin_offset = 0, data_cubin_bytes = 0;
  std::vector<std::string> features;  ///< CPU features the code needs (cpuinfo spellings)
  std::vector<TensorSpec> tensors;
  std::vector<int> inputs, outputs;  ///< tensor indices
  std::vector<StorageSpec> storages;
  int64_t arena_bytes = 0;
  std::vector<StepSpec> steps;
  std::vector<KernelSpec> kernels;
  std::vector<std::string> warnings;  ///< e.g. workloads exported untuned
  VerificationSpec verification;
  std::string code_sha256, weights_sha256;
  int64_t code_bytes = 0, weights_bytes = 0;
};

std::string ManifestToJson(const Manifest& manifest);
/// INVALID_ARGUMENT (DATA_LOSS for a parse failure) naming the first bad field; also checks that
/// every index refers to an existing tensor, kernel or storage.
absl::StatusOr<Manifest> ManifestFromJson(std::string_view json);

/// Lowercase hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);

/// The artifact file's bytes: `manifest` (its checksum and size fields filled in here), `code`
/// and `weights`.
std::string WriteArtifact(Manifest manifest, std::string_view code, std::string_view weights);

/// The sections of an artifact, viewing `bytes` (which must outlive the result).
struct ArtifactView {
  Manifest manifest;
  std::string_view code;
  std::string_view weights;
};
/// Parses and verifies `bytes`: DATA_LOSS "truncated"/"corrupt ..." naming the section whose
/// size or checksum is wrong; INVALID_ARGUMENT for a file that is not an artifact.
absl::StatusOr<ArtifactView> ReadArtifact(std::string_view bytes);

}  // namespace gtco::runtime
