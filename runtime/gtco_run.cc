// gtco-run: runs an exported model.
//   gtco-run MODEL.gtco [--input NAME=FILE.npy]... [--random-inputs] [--output-dir DIR]
//            [--threads N] [--bench N] [--profile] [--describe] [--json]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "runtime/model.h"
#include "runtime/reference_ops.h"
#include "runtime/npy.h"
#include "runtime/parallel.h"

namespace gtco::runtime {
namespace {

/// A kernel doing at least this many operations per byte of its minimum traffic counts as
/// compute-bound in a profile: about a CPU core's FMA peak over its share of DRAM bandwidth
/// (e.g. 100 GFLOP/s over 12 GB/s).
constexpr double kRidgeFlopsPerByte = 8.0;

constexpr const char* kUsage =
    "usage: gtco-run MODEL.gtco [--input NAME=FILE.npy]... [--random-inputs] [--output-dir DIR]\n"
    "                [--threads N] [--bench N] [--profile] [--describe] [--json]\n"
    "  --input NAME=FILE.npy  an input (numpy.save format); every input is needed unless\n"
    "                         --random-inputs fills the missing ones (uniform [-1, 1], or\n"
    "                         indices in [0, 2) for integer inputs)\n"
    "  --output-dir DIR       write each output as DIR/<output name>.npy\n"
    "  --threads N            threads of the kernels' parallel loops (default: all cores)\n"
    "  --bench N              time N runs after 3 warm-up runs; prints median_seconds\n"
    "  --profile              seconds per step (median of 5-20 warm runs), slowest first, with\n"
    "                         each kernel's GFLOP/s (compute-bound) or GB/s (memory-bound)\n"
    "  --describe             the model's inputs, outputs and kernels (with provenance)\n"
    "Exit codes: 0 ok, 1 the run failed, 2 usage, 3 the artifact does not load.\n";

int Usage(const std::string& message) {
  if (!message.empty()) std::cerr << "gtco-run: " << message << "\n";
  std::cerr << kUsage;
  return 2;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

/// A file-system-safe file name for an output tensor name ("/" and other odd characters -> "_").
std::string FileName(const std::string& name) {
  std::string out;
  for (char c : name) out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                                            c == '-' || c == '_' ? c : '_');
  return out.empty() ? "output" : out;
}

NpyArray RandomArray(const TensorSpec& t, uint64_t seed) {
  NpyArray array;
  array.dtype = t.dtype;
  array.shape = t.shape;
  array.data.resize(t.Bytes());
  std::mt19937_64 rng(seed);
  const int64_t count = t.NumElements();
  for (int64_t i = 0; i < count; ++i) {
    if (t.dtype == ElemType::kF32) {
      const float value = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
      std::memcpy(array.data.data() + 4 * i, &value, 4);
    } else if (t.dtype == ElemType::kI64) {
      const int64_t value = static_cast<int64_t>(rng() % 2);
      std::memcpy(array.data.data() + 8 * i, &value, 8);
    } else if (t.dtype == ElemType::kI32) {
      const int32_t value = static_cast<int32_t>(rng() % 2);
      std::memcpy(array.data.data() + 4 * i, &value, 4);
    } else {
      array.data[i * ElemSize(t.dtype)] = static_cast<char>(rng() % 2);
    }
  }
  return array;
}

int Main(int argc, char** argv) {
  std::string model_path, output_dir;
  std::map<std::string, std::string> input_files;
  bool random_inputs = false, profile = false, describe = false, json = false;
  int threads = 0, bench = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--input") {
      const char* text = value();
      if (text == nullptr) return Usage("--input needs NAME=FILE.npy");
      const std::string spec = text;
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) return Usage("--input needs NAME=FILE.npy");
      input_files[spec.substr(0, eq)] = spec.substr(eq + 1);
    } else if (arg == "--output-dir") {
      const char* text = value();
      if (text == nullptr) return Usage("--output-dir needs a directory");
      output_dir = text;
    } else if (arg == "--threads" || arg == "--bench") {
      const char* text = value();
      int number = 0;
      if (text == nullptr || !absl::SimpleAtoi(text, &number) || number < 0) {
        return Usage(arg + " needs a non-negative integer");
      }
      (arg == "--threads" ? threads : bench) = number;
    } else if (arg == "--random-inputs") {
      random_inputs = true;
    } else if (arg == "--profile") {
      profile = true;
    } else if (arg == "--describe") {
      describe = true;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage("unknown flag " + arg);
    } else if (model_path.empty()) {
      model_path = arg;
    } else {
      return Usage("more than one model given");
    }
  }
  if (model_path.empty()) return Usage("no model given");
  if (threads > 0) SetParallelThreads(threads);
  auto describe_model = [&](const Manifest& m, nlohmann::json& report) {
    nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array(),
                   kernels = nlohmann::json::array();
    for (int index : m.inputs) {
      inputs.push_back({{"name", m.tensors[index].name},
                        {"dtype", ElemTypeName(m.tensors[index].dtype)},
                        {"shape", m.tensors[index].shape}});
    }
    for (int index : m.outputs) {
      outputs.push_back({{"name", m.tensors[index].name},
                         {"dtype", ElemTypeName(m.tensors[index].dtype)},
                         {"shape", m.tensors[index].shape}});
    }
    for (const KernelSpec& k : m.kernels) {
      kernels.push_back({{"workload_key", k.workload_key}, {"description", k.description},
                         {"mapping", k.mapping}, {"tuned", k.tuned}, {"hardware", k.hardware},
                         {"median_seconds", k.median_seconds}, {"trace", k.trace}});
    }
    nlohmann::json fallbacks = nlohmann::json::array();
    for (const StepSpec& step : m.steps) {
      if (step.op != "reference") continue;
      absl::StatusOr<reference::Node> node = reference::NodeFromJson(step.reference);
      fallbacks.push_back({{"node", step.node}, {"op_type", node.ok() ? node->op_type : "?"}});
    }
    const VerificationSpec& check = m.verification;
    nlohmann::json checked = nlohmann::json::array();
    for (const VerificationSpec::Output& o : check.outputs) {
      checked.push_back({{"name", o.name}, {"max_error", o.max_error}, {"tolerance", o.tolerance}});
    }
    report["inputs"] = inputs;
    report["outputs"] = outputs;
    report["kernels"] = kernels;
    report["fallback_steps"] = fallbacks;
    report["verification"] = {{"status", check.status.empty() ? "not recorded" : check.status},
                              {"reason", check.reason}, {"seed", check.seed},
                              {"input_sets", check.input_sets}, {"rule", check.rule},
                              {"outputs", checked}};
    report["warnings"] = m.warnings;
    if (!json) {
      if (m.target == "cuda") {
        std::cout << "model " << m.model << " (CUDA, compiled for " << m.cuda_arch << ")\n";
      } else {
        std::cout << "model " << m.model << " (compiled for " << m.cpu << ": "
                  << absl::StrJoin(m.features, " ") << ")\n";
      }
      for (int index : m.inputs) {
        std::cout << "  input  " << m.tensors[index].name << " "
                  << ElemTypeName(m.tensors[index].dtype) << " "
                  << ShapeText(m.tensors[index].shape) << "\n";
      }
      for (int index : m.outputs) {
        std::cout << "  output " << m.tensors[index].name << " "
                  << ElemTypeName(m.tensors[index].dtype) << " "
                  << ShapeText(m.tensors[index].shape) << "\n";
      }
      for (const KernelSpec& k : m.kernels) {
        std::cout << "  kernel " << k.description << "  " << k.mapping << "  "
                  << (k.tuned ? absl::StrCat("tuned on ", k.hardware, ", ",
                                             k.median_seconds * 1e6, " us")
                              : std::string("untuned (default schedule)"))
                  << "\n";
      }
      for (const nlohmann::json& fallback : fallbacks) {
        std::cout << "  fallback " << fallback["op_type"].get<std::string>() << " at '"
                  << fallback["node"].get<std::string>()
                  << "' (reference step: no kernel family, not tuned)\n";
      }
      if (check.status == "passed") {
        std::cout << "  verified at export against the reference interpreter of the ONNX graph ("
                  << check.input_sets << " input set" << (check.input_sets == 1 ? "" : "s")
                  << ", seed " << check.seed << "; " << check.rule << "):\n";
        for (const VerificationSpec::Output& o : check.outputs) {
          std::cout << "    " << o.name << " max error " << o.max_error << " (tolerance "
                    << o.tolerance << ")\n";
        }
      } else if (check.status == "skipped") {
        std::cout << "  not verified at export: " << check.reason << "\n";
      } else {
        std::cout << "  no verification recorded (an artifact from before the check)\n";
      }
      for (const std::string& warning : m.warnings) std::cout << "  warning: " << warning << "\n";
    }
  };
  const bool describe_only = describe && input_files.empty() && !random_inputs && bench == 0 &&
                             output_dir.empty() && !profile;
  absl::StatusOr<std::unique_ptr<Model>> loaded = Model::Load(model_path);
  if (!loaded.ok()) {
    // A model this host cannot run (a CUDA artifact without a GPU, code for missing CPU
    // features) can still be described from its verified manifest.
    absl::StatusOr<Manifest> manifest =
        describe_only ? Model::ReadManifest(model_path) : absl::StatusOr<Manifest>(loaded.status());
    if (manifest.ok()) {
      nlohmann::json report = {{"model", manifest->model}, {"target", manifest->target},
                               {"runs_here", false},
                               {"why_not", std::string(loaded.status().message())}};
      describe_model(*manifest, report);
      std::cout << (json ? report.dump(1) + "\n"
                         : absl::StrCat("  cannot run here: ", loaded.status().message(), "\n"));
      return 0;
    }
    std::cerr << "gtco-run: " << loaded.status().message() << "\n";
    return 3;
  }
  const Model& model = **loaded;
  const Manifest& m = model.manifest();
  nlohmann::json report = {{"model", m.model}, {"target", m.target}, {"cpu", m.cpu},
                           {"features", m.features}};
  if (m.target == "cuda") report["cuda_arch"] = m.cuda_arch;
  if (describe) describe_model(m, report);
  // Inputs.
  std::vector<NpyArray> arrays;
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const TensorSpec& t = m.tensors[m.inputs[i]];
    auto file = input_files.find(t.name);
    if (file == input_files.end()) {
      if (!random_inputs) {
        if (describe && bench == 0 && output_dir.empty() && !profile) break;
        std::cerr << "gtco-run: input '" << t.name << "' (" << ElemTypeName(t.dtype) << " "
                  << ShapeText(t.shape) << ") is missing: pass --input " << t.name
                  << "=FILE.npy or --random-inputs\n";
        return 1;
      }
      arrays.push_back(RandomArray(t, 1234 + i));
    } else {
      absl::StatusOr<NpyArray> array = ReadNpy(file->second);
      if (!array.ok()) {
        std::cerr << "gtco-run: " << array.status().message() << "\n";
        return 1;
      }
      arrays.push_back(std::move(*array));
      input_files.erase(file);
    }
  }
  if (!input_files.empty()) {
    std::vector<std::string> names;
    for (int index : m.inputs) names.push_back(m.tensors[index].name);
    std::cerr << "gtco-run: the model has no input '" << input_files.begin()->first
              << "' (its inputs: " << absl::StrJoin(names, ", ") << ")\n";
    return 1;
  }
  if (arrays.size() < m.inputs.size()) {  // --describe alone
    std::cout << (json ? report.dump(1) + "\n" : "");
    return 0;
  }
  for (const NpyArray& array : arrays) inputs.push_back({array.dtype, array.shape, array.data.data()});
  absl::StatusOr<std::vector<OutputTensor>> outputs = model.Run(inputs);
  if (!outputs.ok()) {
    std::cerr << "gtco-run: " << outputs.status().message() << "\n";
    return 1;
  }
  nlohmann::json written = nlohmann::json::array();
  if (!output_dir.empty()) {
    for (const OutputTensor& output : *outputs) {
      NpyArray array{output.dtype, output.shape, std::string(output.bytes.begin(), output.bytes.end())};
      const std::string path = output_dir + "/" + FileName(output.name) + ".npy";
      absl::Status status = WriteNpy(path, array);
      if (!status.ok()) {
        std::cerr << "gtco-run: " << status.message() << " (does " << output_dir << " exist?)\n";
        return 1;
      }
      written.push_back({{"name", output.name}, {"path", path}, {"shape", output.shape}});
      if (!json) std::cout << "wrote " << path << " " << ShapeText(output.shape) << "\n";
    }
  }
  report["outputs_written"] = written;
  if (profile) {
    // The first run touches the arena's pages and the weights: profile warm runs, each step's
    // median over them.
    for (int warm = 0; warm < 2; ++warm) (void)model.Run(inputs);
    const int profile_runs = std::clamp(bench, 5, 20);
    std::vector<std::vector<StepTime>> runs(profile_runs);
    for (std::vector<StepTime>& run : runs) {
      absl::StatusOr<std::vector<OutputTensor>> again = model.Run(inputs, &run);
      if (!again.ok()) {
        std::cerr << "gtco-run: " << again.status().message() << "\n";
        return 1;
      }
    }
    std::vector<StepTime> steps = runs[0];
    for (size_t i = 0; i < steps.size(); ++i) {
      std::vector<double> seconds;
      for (const std::vector<StepTime>& run : runs) seconds.push_back(run[i].seconds);
      std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
      steps[i].seconds = seconds[seconds.size() / 2];
    }
    // Slowest first; each row keeps its step's place in the run ("step" in the JSON).
    std::vector<size_t> order(steps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return steps[a].seconds > steps[b].seconds; });
    double total = 0.0;
    for (const StepTime& step : steps) total += step.seconds;
    nlohmann::json rows = nlohmann::json::array();
    // Kernels by their arithmetic intensity: compute-bound ones (matmuls, convolutions,
    // attention) are rated in GFLOP/s, memory-bound ones in GB/s of their minimum traffic.
    struct Share {
      double seconds = 0, flops = 0, bytes = 0;
    } compute, memory, other;
    for (const size_t index : order) {
      const StepTime& step = steps[index];
      const bool compute_bound =
          step.flops > 0 && step.flops >= kRidgeFlopsPerByte * step.min_bytes;
      const double gflops = step.seconds > 0 ? step.flops / step.seconds * 1e-9 : 0.0;
      const double gbytes = step.seconds > 0 ? step.min_bytes / step.seconds * 1e-9 : 0.0;
      Share& share = compute_bound ? compute : step.min_bytes > 0 ? memory : other;
      share.seconds += step.seconds;
      share.flops += static_cast<double>(step.flops);
      share.bytes += static_cast<double>(step.min_bytes);
      nlohmann::json row = {{"step", index}, {"op", step.op}, {"node", step.node},
                            {"description", step.description}, {"seconds", step.seconds}};
      if (step.flops > 0 || step.min_bytes > 0) {
        row["flops"] = step.flops;
        row["min_bytes"] = step.min_bytes;
        row["gflops_per_second"] = gflops;
        row["gbytes_per_second"] = gbytes;
        row["bound"] = compute_bound ? "compute" : "memory";
      }
      rows.push_back(std::move(row));
      if (!json) {
        char rate[32] = "";
        if (compute_bound) {
          std::snprintf(rate, sizeof(rate), "%7.1f GFLOP/s", gflops);
        } else if (step.min_bytes > 0) {
          std::snprintf(rate, sizeof(rate), "%7.1f GB/s   ", gbytes);
        }
        std::printf("  %9.1f us %5.1f%% %15s  %-9s %s %s\n", step.seconds * 1e6,
                    total > 0 ? 100.0 * step.seconds / total : 0.0, rate, step.op.c_str(),
                    step.description.c_str(), step.node.c_str());
      }
    }
    report["profile"] = rows;
    auto summary = [](const Share& share) {
      return nlohmann::json{{"seconds", share.seconds}, {"flops", share.flops},
                            {"min_bytes", share.bytes}};
    };
    report["profile_summary"] = {{"seconds", total},
                                 {"compute_bound", summary(compute)},
                                 {"memory_bound", summary(memory)},
                                 {"other_steps", summary(other)}};
    if (!json && total > 0) {
      std::printf(
          "  %.1f us in all: compute-bound kernels %.1f%% (%.1f GFLOP/s), memory-bound kernels "
          "%.1f%% (%.1f GB/s), other steps %.1f%%\n",
          total * 1e6, 100 * compute.seconds / total,
          compute.seconds > 0 ? compute.flops / compute.seconds * 1e-9 : 0.0,
          100 * memory.seconds / total,
          memory.seconds > 0 ? memory.bytes / memory.seconds * 1e-9 : 0.0,
          100 * other.seconds / total);
    }
  }
  if (bench > 0) {
    for (int warm = 0; warm < 3; ++warm) (void)model.Run(inputs);
    std::vector<double> seconds;
    for (int run = 0; run < bench; ++run) {
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<std::vector<OutputTensor>> again = model.Run(inputs);
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      if (!again.ok()) {
        std::cerr << "gtco-run: " << again.status().message() << "\n";
        return 1;
      }
      seconds.push_back(elapsed.count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    report["runs"] = bench;
    report["median_seconds"] = median;
    report["min_seconds"] = seconds.front();
    report["threads"] = ParallelThreads();
    if (!json) {
      std::printf("median %.3f ms over %d runs (min %.3f ms, %d threads)\n", median * 1e3, bench,
                  seconds.front() * 1e3, ParallelThreads());
    }
  }
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) == 0) report["peak_rss_bytes"] = usage.ru_maxrss * 1024;
  if (json) std::cout << report.dump(1) << "\n";
  return 0;
}

}  // namespace
}  // namespace gtco::runtime

int main(int argc, char** argv) { return gtco::runtime::Main(argc, argv); }
