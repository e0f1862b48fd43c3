// GPU benchmark, one process: re-times the best tuned kernel of each workload (a TSV exported by
// gpu_farm.py from the farm's database) with the CUDA worker's own measurer, and for GEMMs times
// cuBLAS (cublasGemmEx, f16/bf16 inputs, fp32 accumulation) on the same GPU, the L2 flushed before
// every timed launch in both cases. Prints a markdown table and writes it (and JSON) to files.
//
//   gpu_vs_vendor --traces best_traces.tsv [--markdown out.md] [--json out.json]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/ir/workload.h"
#include "common/kernels/build_program.h"
#include "common/kernels/registry.h"
#include "common/schedule/trace.h"
#include "common/util/flags.h"
#include "common/util/hash.h"
#include "worker/cuda_measure.h"

namespace gtco::bench {
namespace {

struct Row {
  std::string name, kind, key, trace;
  double farm_seconds = 0;
  ir::Workload workload;
};

struct Timing {
  std::string name, kind, description;
  double ours_seconds = 0, vendor_seconds = 0, flops = 0;
  std::string note;
};

absl::StatusOr<std::vector<Row>> ReadTraces(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::vector<Row> rows;
  std::string line;
  while (std::getline(file, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    if (fields.size() != 6) continue;
    Row row{fields[0], fields[1], fields[2], fields[3], std::stod(fields[4]), {}};
    absl::StatusOr<ir::Workload> workload =
        ir::ParseWorkload(absl::StrReplaceAll(fields[5], {{"\\n", "\n"}}));
    if (!workload.ok()) return workload.status();
    row.workload = std::move(*workload);
    rows.push_back(std::move(row));
  }
  return rows;
}

/// Median seconds of cublasGemmEx for the row-major matmul `w` (f16/bf16 in, fp32 accumulate).
absl::StatusOr<double> TimeCublas(const ir::Workload& w, int64_t l2_bytes) {
  const ir::MatMulParams& mm = w.matmul;
  if (mm.batch != 1 || mm.trans_a || mm.trans_b) {
    return absl::UnimplementedError("cuBLAS baseline only for plain 2-D GEMMs");
  }
  auto type_of = [](ir::DType dtype) {
    return dtype == ir::DType::kBF16  ? CUDA_R_16BF
           : dtype == ir::DType::kF16 ? CUDA_R_16F
                                      : CUDA_R_32F;
  };
  const cudaDataType in_type = type_of(w.inputs[0].dtype), out_type = type_of(w.output.dtype);
  const size_t in_size = ir::DTypeSize(w.inputs[0].dtype), out_size = ir::DTypeSize(w.output.dtype);
  void *a = nullptr, *b = nullptr, *c = nullptr, *flush = nullptr;
  if (cudaMalloc(&a, mm.m * mm.k * in_size) != cudaSuccess ||
      cudaMalloc(&b, mm.k * mm.n * in_size) != cudaSuccess ||
      cudaMalloc(&c, mm.m * mm.n * out_size) != cudaSuccess ||
      cudaMalloc(&flush, 2 * l2_bytes) != cudaSuccess) {
    return absl::ResourceExhaustedError("cudaMalloc failed");
  }
  cudaMemset(a, 0x3c, mm.m * mm.k * in_size);  // small positive values in f16 and bf16
  cudaMemset(b, 0x3c, mm.k * mm.n * in_size);
  cublasHandle_t handle;
  cublasCreate(&handle);
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C[m,n] = A[m,k] B[k,n] is column-major C^T = B^T A^T.
  auto gemm = [&] {
    return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, mm.n, mm.m, mm.k, &alpha, b, in_type,
                        mm.n, a, in_type, mm.k, &beta, c, out_type, mm.n, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
  };
  absl::Status status;
  for (int warmup = 0; warmup < 5 && status.ok(); ++warmup) {
    if (gemm() != CUBLAS_STATUS_SUCCESS) status = absl::InternalError("cublasGemmEx failed");
  }
  std::vector<double> samples;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int repeat = 0; repeat < 50 && status.ok(); ++repeat) {
    cudaMemsetAsync(flush, repeat & 0xff, 2 * l2_bytes);
    cudaEventRecord(start);
    gemm();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    samples.push_back(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(flush);
  if (!status.ok()) return status;
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

int Run(int argc, char** argv) {
  util::FlagSpec spec{{"traces", "markdown", "json"}, {"help"}};
  auto args = util::ParsedArgs::Parse(std::vector<std::string>(argv + 1, argv + argc), spec);
  if (!args.ok() || !args->Has("traces")) {
    std::cerr << "usage: gpu_vs_vendor --traces best_traces.tsv [--markdown F] [--json F]\n";
    return 2;
  }
  absl::StatusOr<std::vector<Row>> rows = ReadTraces(args->Get("traces"));
  if (!rows.ok()) {
    std::cerr << "gpu_vs_vendor: " << rows.status().message() << "\n";
    return 1;
  }
  auto measurer = worker::CudaMeasurer::Create(0);
  if (!measurer.ok()) {
    std::cerr << "gpu_vs_vendor: " << measurer.status().message() << "\n";
    return 1;
  }
  const target::HardwareInfo& gpu = (*measurer)->hardware();
  std::vector<Timing> timings;
  for (const Row& row : *rows) {
    Timing timing{row.name, row.kind, row.workload.Description(), 0, 0, 0, ""};
    timing.flops = static_cast<double>(row.workload.Flops());
    absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(row.trace);
    absl::StatusOr<kernels::CudaKernel> kernel =
        trace.ok() ? kernels::GenerateCudaKernel(row.workload, *trace, "gtco_kernel")
                   : absl::StatusOr<kernels::CudaKernel>(trace.status());
    if (!kernel.ok()) {
      timing.note = std::string(kernel.status().message());
      timings.push_back(timing);
      continue;
    }
    gtco::v1::Candidate candidate;
    candidate.set_candidate_id(row.name);
    candidate.set_workload_key(row.key);
    candidate.set_workload(row.workload.CanonicalString());
    candidate.set_trace(row.trace);
    candidate.set_language("cuda-c");
    candidate.set_entry(kernel->entry);
    candidate.set_program_hash(util::HexDigest128(kernel->source));
    candidate.set_program(kernel->source);
    gtco::v1::CudaLaunch& launch = *candidate.mutable_launch();
    launch.set_grid_x(kernel->plan.grid_x);
    launch.set_grid_y(kernel->plan.grid_y);
    launch.set_grid_z(kernel->plan.grid_z);
    launch.set_block_x(kernel->plan.block_x);
    launch.set_block_y(kernel->plan.block_y);
    launch.set_block_z(kernel->plan.block_z);
    launch.set_dynamic_shared_bytes(kernel->plan.dynamic_shared_bytes);
    launch.set_arch(kernel->plan.arch);
    gtco::v1::MeasureResult result = (*measurer)->Measure(candidate);
    if (!result.ok()) {
      timing.note = result.error();
      timings.push_back(timing);
      if (!(*measurer)->Usable()) break;
      continue;
    }
    timing.ours_seconds = result.median_seconds();
    if (row.kind == "gemm") {
      absl::StatusOr<double> vendor = TimeCublas(row.workload, gpu.l2_bytes);
      if (vendor.ok()) {
        timing.vendor_seconds = *vendor;
      } else {
        timing.note = std::string(vendor.status().message());
      }
    }
    timings.push_back(timing);
  }

  std::ostringstream markdown, json;
  markdown
      << "GPU: " << gpu.Summary() << ", driver CUDA " << (*measurer)->DriverVersion()
      << "\n\n| workload | shape | GTCO (µs) | cuBLAS (µs) | GTCO/cuBLAS speed | GTCO TFLOP/s | "
         "note |\n|---|---|---|---|---|---|---|\n";
  json << "[";
  for (size_t index = 0; index < timings.size(); ++index) {
    const Timing& t = timings[index];
    const double ratio =
        t.ours_seconds > 0 && t.vendor_seconds > 0 ? t.vendor_seconds / t.ours_seconds : 0;
    markdown << absl::StrFormat(
        "| %s | %s | %.1f | %s | %s | %.1f | %s |\n", t.name, t.description, t.ours_seconds * 1e6,
        t.vendor_seconds > 0 ? absl::StrFormat("%.1f", t.vendor_seconds * 1e6) : std::string("-"),
        ratio > 0 ? absl::StrFormat("%.2f×", ratio) : std::string("-"),
        t.ours_seconds > 0 ? t.flops / t.ours_seconds / 1e12 : 0.0, t.note.substr(0, 120));
    json << (index ? "," : "")
         << absl::StrFormat(
                "{\"name\":\"%s\",\"kind\":\"%s\",\"ours_seconds\":%g,\"vendor_seconds\":%g}",
                t.name, t.kind, t.ours_seconds, t.vendor_seconds);
  }
  json << "]\n";
  std::cout << markdown.str();
  if (args->Has("markdown")) std::ofstream(args->Get("markdown")) << markdown.str();
  if (args->Has("json")) std::ofstream(args->Get("json")) << json.str();
  return 0;
}

}  // namespace
}  // namespace gtco::bench

int main(int argc, char** argv) { return gtco::bench::Run(argc, argv); }
