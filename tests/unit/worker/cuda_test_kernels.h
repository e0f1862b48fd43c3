// Hand-written CUDA C candidates for the worker's tests: the GPU tests measure them, and a test
// without a GPU checks that each compiles with NVRTC.
#pragma once

#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/build_program.h"
#include "common/schedule/trace.h"
#include "gtco/v1/gtco.pb.h"

namespace gtco::worker::testing {

constexpr int kAddOneElements = 1 << 20;
constexpr int kAddOneBlock = 256;

/// out[i] = in0[i] + 1 over `elements` f32 values.
inline ir::Workload AddOneWorkload(int64_t elements = kAddOneElements) {
  ir::Workload workload;
  workload.anchor = ir::AnchorKind::kNone;
  workload.inputs = {ir::TensorDesc{ir::DType::kF32, {elements}}};
  workload.output = ir::TensorDesc{ir::DType::kF32, {elements}};
  ir::EwInstr add;
  add.op = ir::EwOp::kAdd;
  add.args = {ir::Operand{ir::Operand::Kind::kInput, 0, 0.0f},
              ir::Operand{ir::Operand::Kind::kConst, 0, 1.0f}};
  workload.epilogue = {add};
  return workload;
}

/// C[m, n] = A[m, k] B[k, n] with bf16 inputs and an f32 output (a batch of one, shaped as the
/// matmul workloads the planner makes: [1, m, k] x [1, k, n] -> [1, m, n]).
inline ir::Workload Bf16MatMulWorkload(int64_t m, int64_t n, int64_t k) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kMatMul;
  w.matmul.m = m;
  w.matmul.n = n;
  w.matmul.k = k;
  w.inputs = {{ir::DType::kBF16, {1, m, k}}, {ir::DType::kBF16, {1, k, n}}};
  w.num_anchor_inputs = 2;
  w.output = {ir::DType::kF32, {1, m, n}};
  return w;
}

/// Kernels over AddOneWorkload(): kernel(const float* in0, float* out).
inline std::string AddOneSource(const std::string& entry, const std::string& body) {
  return absl::StrCat("extern \"C\" __global__ void ", entry,
                      "(const float* in0, float* out) {\n"
                      "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n",
                      body, "\n}\n");
}

/// Correct.
inline std::string CorrectAddOne() {
  return AddOneSource("add_one",
                      absl::StrCat("  if (i < ", kAddOneElements, ") out[i] = in0[i] + 1.0f;"));
}
/// Wrong: copies its input.
inline std::string WrongAddOne() {
  return AddOneSource("add_one", absl::StrCat("  if (i < ", kAddOneElements, ") out[i] = in0[i];"));
}
/// Correct, staging through shared memory beyond the 48 KiB default (launch with
/// kSharedAddOneBytes of dynamic shared memory).
constexpr int kSharedAddOneOffset = 16000;  // floats: 62.5 KiB in
constexpr int kSharedAddOneBytes = (kSharedAddOneOffset + kAddOneBlock) * 4;
inline std::string SharedAddOne() {
  return AddOneSource(
      "add_one",
      absl::StrCat("  extern __shared__ float staged[];\n", "  staged[threadIdx.x + ",
                   kSharedAddOneOffset, "] = i < ", kAddOneElements,
                   " ? in0[i] : 0.0f;\n  __syncthreads();\n", "  if (i < ", kAddOneElements,
                   ") out[i] = staged[threadIdx.x + ", kSharedAddOneOffset, "] + 1.0f;"));
}
/// Faults: stores into the unmapped page at address 0 (CUDA_ERROR_ILLEGAL_ADDRESS).
inline std::string FaultingAddOne() {
  return AddOneSource("add_one",
                      "  volatile float* bad = reinterpret_cast<volatile float*>(64ull);\n"
                      "  bad[i] = in0[i];");
}
/// Never finishes.
inline std::string HangingAddOne() {
  // The clock is read by volatile asm, so the compiler can neither drop nor bound the loop (a
  // volatile local was optimized away by NVRTC 13 on an H100).
  return AddOneSource("add_one", "  while (clock64() >= 0) {}\n  out[i] = 0.0f;");
}
/// Does not compile.
inline std::string BrokenAddOne() { return AddOneSource("add_one", "  out[i] = undeclared;"); }

/// A CUDA C candidate for AddOneWorkload() with `source`'s kernel "add_one".
inline gtco::v1::Candidate AddOneCandidate(const std::string& id, const std::string& source,
                                           int64_t dynamic_shared_bytes = 0) {
  gtco::v1::Candidate candidate;
  candidate.set_candidate_id(id);
  candidate.set_workload_key("test-cuda-add-one");
  candidate.set_workload(AddOneWorkload().CanonicalString());
  candidate.set_language("cuda-c");
  candidate.set_entry("add_one");
  candidate.set_program(source);
  candidate.set_program_hash(id + "-" + std::to_string(std::hash<std::string>{}(source)));
  gtco::v1::CudaLaunch* launch = candidate.mutable_launch();
  launch->set_grid_x((kAddOneElements + kAddOneBlock - 1) / kAddOneBlock);
  launch->set_grid_y(1);
  launch->set_grid_z(1);
  launch->set_block_x(kAddOneBlock);
  launch->set_block_y(1);
  launch->set_block_z(1);
  launch->set_dynamic_shared_bytes(dynamic_shared_bytes);
  return candidate;
}

/// A naive bf16 x bf16 -> f32 matmul over Bf16MatMulWorkload(m, n, k): one thread per output,
/// 16 x 16 blocks (m and n multiples of 16).
inline gtco::v1::Candidate Bf16MatMulCandidate(const std::string& id, int64_t m, int64_t n,
                                               int64_t k) {
  gtco::v1::Candidate candidate;
  candidate.set_candidate_id(id);
  const ir::Workload workload = Bf16MatMulWorkload(m, n, k);
  candidate.set_workload_key(workload.Key());
  candidate.set_workload(workload.CanonicalString());
  candidate.set_language("cuda-c");
  candidate.set_entry("mm_bf16");
  candidate.set_program(absl::StrCat(
      "__device__ float bf16(unsigned short bits) {\n"
      "  return __uint_as_float(static_cast<unsigned>(bits) << 16);\n}\n"
      "extern \"C\" __global__ void mm_bf16(const unsigned short* a, const unsigned short* b,\n"
      "                                     float* c) {\n"
      "  const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;\n"
      "  float acc = 0.0f;\n"
      "  for (int kk = 0; kk < ",
      k, "; ++kk) acc += bf16(a[row * ", k, " + kk]) * bf16(b[kk * ", n,
      " + col]);\n"
      "  c[row * ",
      n, " + col] = acc;\n}\n"));
  candidate.set_program_hash(id);
  gtco::v1::CudaLaunch* launch = candidate.mutable_launch();
  launch->set_grid_x(n / 16);
  launch->set_grid_y(m / 16);
  launch->set_grid_z(1);
  launch->set_block_x(16);
  launch->set_block_y(16);
  launch->set_block_z(1);
  return candidate;
}

/// The candidate a worker receives for a generated kernel: (w, trace) through
/// kernels::GenerateCudaKernel, with its launch.
inline absl::StatusOr<gtco::v1::Candidate> GeneratedCandidate(const ir::Workload& w,
                                                             const schedule::Trace& trace) {
  absl::StatusOr<kernels::CudaKernel> kernel = kernels::GenerateCudaKernel(w, trace, "gtco_kernel");
  if (!kernel.ok()) return kernel.status();
  gtco::v1::Candidate candidate;
  candidate.set_candidate_id(trace.ToString());
  candidate.set_workload_key(w.Key());
  candidate.set_workload(w.CanonicalString());
  candidate.set_trace(trace.ToString());
  candidate.set_language("cuda-c");
  candidate.set_program(kernel->source);
  candidate.set_entry(kernel->entry);
  gtco::v1::CudaLaunch* launch = candidate.mutable_launch();
  launch->set_grid_x(kernel->plan.grid_x);
  launch->set_grid_y(kernel->plan.grid_y);
  launch->set_grid_z(kernel->plan.grid_z);
  launch->set_block_x(kernel->plan.block_x);
  launch->set_block_y(kernel->plan.block_y);
  launch->set_block_z(kernel->plan.block_z);
  launch->set_dynamic_shared_bytes(kernel->plan.dynamic_shared_bytes);
  launch->set_arch(kernel->plan.arch);
  return candidate;
}

}  // namespace gtco::worker::testing
