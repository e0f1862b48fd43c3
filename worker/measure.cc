// Compile, verify and time one candidate.
#include "worker/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <emmintrin.h>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <random>

#include "common/ir/reference.h"
#include "common/ir/workload.h"
#include "common/kernels/build_program.h"
#include "common/kernels/prepack.h"
#include "common/schedule/trace.h"
#include "common/util/status.h"

namespace gtco::worker {
namespace {

constexpr int kResetEveryCompiles = 256;
constexpr int64_t kMaxCachedBytes = int64_t{1} << 30;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Non-f32 workloads (bf16 / integer matmuls): ReferenceData keeps each tensor's values as floats
// (exact for bf16, u8 and i8), except an i32 output, whose expected elements are kept as their
// bit patterns so that the comparison stays exact beyond 2^24.
bool HasNonF32Tensors(const ir::Workload& w) {
  if (w.output.dtype != ir::DType::kF32) return true;
  return std::any_of(w.inputs.begin(), w.inputs.end(),
                     [](const ir::TensorDesc& input) { return input.dtype != ir::DType::kF32; });
}

std::vector<float> ExpectedStorage(const ir::TypedBuffer& expected) {
  if (expected.dtype() != ir::DType::kI32) return expected.ToFloats();
  std::vector<float> storage(expected.size());
  std::memcpy(storage.data(), expected.data(), storage.size() * sizeof(float));
  return storage;
}

ir::TypedBuffer ExpectedFromStorage(ir::DType dtype, const std::vector<float>& storage) {
  if (dtype != ir::DType::kI32) return ir::TypedBuffer::FromValues(dtype, storage);
  ir::TypedBuffer expected(dtype, static_cast<int64_t>(storage.size()));
  std::memcpy(expected.data(), storage.data(), storage.size() * sizeof(float));
  return expected;
}

/// One argument's f32 storage, 64-byte aligned like the tensors of a model's arena
/// (runtime/model.cc): a vector's 16-byte alignment splits 64-byte vector accesses across two
/// cache lines.
class AlignedFloats {
 public:
  /// `size` floats: a copy of `values`, or `fill` everywhere when `values` is null.
  AlignedFloats(const float* values, size_t size, float fill) : size_(size) {
    const size_t rounded = (std::max<size_t>(size, 1) * sizeof(float) + 63) / 64 * 64;
    data_.reset(static_cast<float*>(std::aligned_alloc(64, rounded)));
    if (data_ == nullptr) throw std::bad_alloc();
    if (values != nullptr) {
      std::memcpy(data_.get(), values, size * sizeof(float));
    } else {
      std::fill(data_.get(), data_.get() + size, fill);
    }
  }
  float* data() const { return data_.get(); }
  std::vector<float> ToVector() const {
    return std::vector<float>(data_.get(), data_.get() + size_);
  }

 private:
  struct Free {
    void operator()(float* pointer) const { std::free(pointer); }
  };
  size_t size_;
  std::unique_ptr<float, Free> data_;
};

/// The argument buffers of one measurement: fresh copies of the inputs (a kernel that writes
/// its inputs must not poison later ones), non-f32 ones in their dtype's storage, and an output
/// holding what no correct kernel leaves (NaN; -1234567 for integers).
struct KernelBuffers {
  KernelBuffers(const ir::Workload& w, const std::vector<std::vector<float>>& inputs,
                size_t output_size)
      : typed(HasNonF32Tensors(w)),
        typed_output(typed ? w.output.dtype : ir::DType::kF32,
                     typed ? static_cast<int64_t>(output_size) : 0) {
    if (!typed) {
      for (const auto& input : inputs) {
        f32_inputs.emplace_back(input.data(), input.size(), 0.0f);
        args.push_back(f32_inputs.back().data());
        bytes.push_back(input.size() * sizeof(float));
      }
      f32_output.emplace_back(nullptr, output_size, std::numeric_limits<float>::quiet_NaN());
      args.push_back(f32_output.back().data());
      bytes.push_back(output_size * sizeof(float));
      MarkCold(w);
      return;
    }
    for (size_t input_idx = 0; input_idx < inputs.size(); ++input_idx) {
      typed_inputs.push_back(
          ir::TypedBuffer::FromValues(w.inputs[input_idx].dtype, inputs[input_idx]));
    }
    for (int64_t idx = 0; idx < typed_output.size(); ++idx) {
      typed_output.Set(idx, ir::IsIntegerDType(typed_output.dtype())
                                ? -1234567.0
                                : std::numeric_limits<double>::quiet_NaN());
    }
    for (size_t input_idx = 0; input_idx < typed_inputs.size(); ++input_idx) {
      args.push_back(typed_inputs[input_idx].data());
      bytes.push_back(typed_inputs[input_idx].size() * ir::DTypeSize(w.inputs[input_idx].dtype));
    }
    args.push_back(typed_output.data());
    bytes.push_back(typed_output.size() * ir::DTypeSize(typed_output.dtype()));
    MarkCold(w);
  }

  void MarkCold(const ir::Workload& w) {
    cold = ColdArguments(w);
    cold.resize(args.size(), true);
  }

  /// Evicts the cold arguments from the caches (clflush of each line). A kernel timed with its
  /// weights hot looks faster than it runs in a model, and one that re-reads its weights looks
  /// as fast as one that streams them once (ResNet-50's kernels summed 43 ms measured hot
  /// against 51 ms in the model). TVM's MetaSchedule flushes every argument but the first
  /// (cache_flush_cpu_non_first_arg).
  void EvictColdArguments() const {
    for (size_t arg = 0; arg < args.size(); ++arg) {
      if (!cold[arg]) continue;
      const char* begin = static_cast<const char*>(args[arg]);
      for (size_t offset = 0; offset < bytes[arg]; offset += 64) _mm_clflush(begin + offset);
    }
    _mm_mfence();
  }

  /// The output against the reference (kept as ExpectedStorage for typed workloads).
  absl::Status Verify(const ir::Workload& w, const std::vector<float>& expected, double rtol,
                      double atol) const {
    if (!typed) return ir::CompareOutputs(expected, f32_output.front().ToVector(), rtol, atol);
    return ir::CompareTypedOutputs(ExpectedFromStorage(w.output.dtype, expected), typed_output,
                                   rtol, atol);
  }

  bool typed;
  std::vector<AlignedFloats> f32_inputs;
  std::vector<AlignedFloats> f32_output;  ///< one element (untyped workloads)
  std::vector<ir::TypedBuffer> typed_inputs;
  ir::TypedBuffer typed_output;
  std::vector<void*> args;    ///< kernel arguments: the inputs, then the output
  std::vector<size_t> bytes;  ///< each argument's size in bytes
  std::vector<bool> cold;     ///< per argument: evicted before each timed run
};

}  // namespace

std::vector<bool> ColdArguments(const ir::Workload& w) {
  std::vector<bool> cold(w.inputs.size() + 1, false);
  const int64_t output_elements = w.output.NumElements();
  for (size_t input = 1; input < w.inputs.size(); ++input) {
    const bool anchor = static_cast<int>(input) < w.num_anchor_inputs;
    cold[input] = anchor || w.inputs[input].NumElements() < output_elements;
  }
  cold.back() = false;  // the output: arena memory another kernel used a few steps before
  return cold;
}

CandidateMeasurer::CandidateMeasurer(std::unique_ptr<codegen::CpuJit> jit, MeasureOptions options)
    : jit_(std::move(jit)), options_(options) {
  seed_ = options.seed != 0 ? options.seed : std::random_device{}();
}

absl::StatusOr<std::unique_ptr<CandidateMeasurer>> CandidateMeasurer::Create(
    MeasureOptions options) {
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<codegen::CpuJit> jit, codegen::CpuJit::Create());
  return std::unique_ptr<CandidateMeasurer>(new CandidateMeasurer(std::move(jit), options));
}

absl::StatusOr<const CandidateMeasurer::ReferenceData*> CandidateMeasurer::Reference(
    const gtco::v1::Candidate& candidate) {
  auto found = references_.find(candidate.workload_key());
  if (found != references_.end()) return found->second.get();
  GTCO_ASSIGN_OR_RETURN(ir::Workload workload, ir::ParseWorkload(candidate.workload()));
  auto data = std::make_unique<ReferenceData>();
  data->inputs = ir::RandomInputs(workload, seed_++);
  if (HasNonF32Tensors(workload)) {
    std::vector<ir::TypedBuffer> typed_inputs;
    for (size_t input_idx = 0; input_idx < data->inputs.size(); ++input_idx) {
      typed_inputs.push_back(
          ir::TypedBuffer::FromValues(workload.inputs[input_idx].dtype, data->inputs[input_idx]));
    }
    data->expected = ExpectedStorage(ir::ComputeTypedReference(workload, typed_inputs));
  } else {
    data->expected = ir::ComputeReference(workload, data->inputs);
  }
  ir::DefaultTolerance(workload, &data->rtol, &data->atol);
  int64_t bytes = static_cast<int64_t>(data->expected.size()) * 4;
  for (const auto& input : data->inputs) bytes += static_cast<int64_t>(input.size()) * 4;
  if (cached_bytes_ + bytes > kMaxCachedBytes) {
    references_.clear();
    cached_bytes_ = 0;
  }
  cached_bytes_ += bytes;
  const ReferenceData* pointer = data.get();
  references_[candidate.workload_key()] = std::move(data);
  return pointer;
}

absl::StatusOr<std::string> CandidateMeasurer::ProgramOf(const gtco::v1::Candidate& candidate) {
  if (candidate.language() != "trace") return candidate.program();
  // The server sent no program: replay the trace with this release's kernel families.
  GTCO_ASSIGN_OR_RETURN(ir::Workload workload, ir::ParseWorkload(candidate.workload()));
  GTCO_ASSIGN_OR_RETURN(schedule::Trace trace, schedule::Trace::Parse(candidate.trace()));
  GTCO_ASSIGN_OR_RETURN(
      kernels::Program program,
      kernels::BuildCode(workload, trace, target::Target::kCpu,
                         candidate.entry().empty() ? kernels::kDefaultEntry : candidate.entry()));
  return std::move(program.code);
}

gtco::v1::MeasureResult CandidateMeasurer::Measure(const gtco::v1::Candidate& candidate) {
  const std::string& language = candidate.language();
  if (!language.empty() && language != "llvm-ir" && language != "llvm-bc" && language != "trace") {
    return FailedResult(
        candidate, gtco::v1::ERROR_KIND_COMPILE,
        absl::StrCat("this CPU worker measures LLVM IR candidates (text or bitcode), not '",
                     candidate.language(), "' (run gtco-worker --target cuda)"));
  }
  if (++compiled_since_reset_ > kResetEveryCompiles) {
    (void)jit_->Reset();
    compiled_since_reset_ = 1;
  }
  auto compile_start = Clock::now();
  absl::StatusOr<std::string> program = ProgramOf(candidate);
  if (!program.ok()) {
    auto result =
        FailedResult(candidate, gtco::v1::ERROR_KIND_COMPILE,
                     absl::StrCat("replaying the trace failed: ", program.status().message()));
    result.set_compile_seconds(SecondsSince(compile_start));
    return result;
  }
  absl::StatusOr<codegen::KernelEntry> entry = jit_->Compile(*program, candidate.entry());
  double compile_seconds = SecondsSince(compile_start);
  if (!entry.ok()) {
    auto result = FailedResult(candidate, gtco::v1::ERROR_KIND_COMPILE,
                               absl::StrCat("compile failed: ", entry.status().message()));
    result.set_compile_seconds(compile_seconds);
    return result;
  }
  absl::StatusOr<const ReferenceData*> reference = Reference(candidate);
  if (!reference.ok()) {
    return FailedResult(candidate, gtco::v1::ERROR_KIND_RUNTIME,
                        absl::StrCat("bad workload: ", reference.status().message()));
  }
  const ReferenceData& data = **reference;
  absl::StatusOr<ir::Workload> workload = ir::ParseWorkload(candidate.workload());
  if (!workload.ok()) {
    return FailedResult(candidate, gtco::v1::ERROR_KIND_RUNTIME,
                        absl::StrCat("bad workload: ", workload.status().message()));
  }
  // A trace reading its weights pre-packed (as exported) gets the random ones packed the same way.
  std::vector<std::vector<float>> packed_inputs;
  const std::vector<std::vector<float>>* inputs = &data.inputs;
  if (!candidate.trace().empty()) {
    absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(candidate.trace());
    if (!trace.ok()) {
      return FailedResult(candidate, gtco::v1::ERROR_KIND_COMPILE,
                          absl::StrCat("the candidate's trace does not parse: ",
                                       trace.status().message()));
    }
    if (kernels::ReadsPrepackedInput(*trace)) {
      packed_inputs = data.inputs;
      absl::Status packed = kernels::PackInputsForTrace(*workload, *trace, &packed_inputs);
      if (!packed.ok()) {
        return FailedResult(candidate, gtco::v1::ERROR_KIND_RUNTIME,
                            absl::StrCat("packing the weights failed: ", packed.message()));
      }
      inputs = &packed_inputs;
    }
  }
  KernelBuffers buffers(*workload, *inputs, data.expected.size());
  (*entry)(buffers.args.data());
  absl::Status verified = buffers.Verify(*workload, data.expected, data.rtol, data.atol);
  if (!verified.ok()) {
    auto result =
        FailedResult(candidate, gtco::v1::ERROR_KIND_WRONG_RESULT,
                     absl::StrCat("output differs from the reference: ", verified.message()));
    result.set_compile_seconds(compile_seconds);
    return result;
  }
  (*entry)(buffers.args.data());  // warm-up
  std::vector<double> samples;
  auto measure_start = Clock::now();
  double measured = 0;
  while (static_cast<int>(samples.size()) < options_.max_repeats) {
    if (options_.cold_weights) buffers.EvictColdArguments();
    auto start = Clock::now();
    (*entry)(buffers.args.data());
    double seconds = SecondsSince(start);
    samples.push_back(seconds);
    measured += seconds;
    bool enough = measured >= options_.min_seconds &&
                  static_cast<int>(samples.size()) >= options_.min_repeats;
    if (enough || SecondsSince(measure_start) > options_.max_seconds) break;
  }
  gtco::v1::MeasureResult result;
  result.set_candidate_id(candidate.candidate_id());
  result.set_ok(true);
  result.set_verified(true);
  result.set_compile_seconds(compile_seconds);
  FillStatistics(std::move(samples), &result);
  return result;
}

}  // namespace gtco::worker
