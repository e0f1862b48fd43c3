// ResNet-50's convolutions and the depthwise and grouped ones of MobileNetV2 and RegNetY (batch 1,
// each with its fused per-channel bias and ReLU) tuned under each CPU conv mapping separately, at
// equal trials, side by side: where the pixel-vectorized implicit GEMM (avx512_fma / avx2_fma) or
// the channel-vectorized one (*_channels: output channels in the vector lanes, pre-packed weights)
// wins, and by how much. Every candidate is compiled, verified and timed by the worker's
// CandidateMeasurer as the farm measures it (weights cold). A table in Markdown on stdout; not a
// test. --defaults measures each mapping's default trace (what an untuned export runs) instead of
// tuning; --trace T measures T (and GTCO_DUMP_IR=FILE writes its LLVM IR there). --residual adds
// the bottleneck block's residual (an input of the output's shape added before the ReLU).
// --interleave N compares the --trace programs (of the bf16x3 form with --bf16x3) against each
// other on a host whose speed drifts (a VM): each is compiled once, then run in turn, N rounds of
// one timed call each (warm caches, after a warm-up round), and the table gives each one's median
// and the median over rounds of its time over the first trace's in the same round. The kernels'
// threads are pinned to cores, as the worker pins them.
// --matmul MxKxN[,MxKxN...] with --interleave compares the --trace programs on f32 matmuls of
// those shapes instead of the convs (batch 1, weights warm, as --interleave runs).
// --bf16 adds the conv as `--precision bf16` runs it: bf16 X in the pair layout and bf16 W (its
// mappings' defaults with --defaults, tuned otherwise, the --interleave traces of that form).
// --bf16x3 adds, for each conv of 32+ channels, the conv as `--precision bf16x3` runs it: the bf16
// conv of the split input ([hi, lo, hi], 3C channels in the pair layout) and the split weights
// on AMX (mapping amx_bf16, where the host has it), its GFLOP/s counted on the f32 conv's
// flops (a third of what the tiles compute); --mapping NAME tunes that mapping only.
//
//   build/bench/conv_mappings [--trials N] [--shapes name,name,...] [--defaults] [--residual]
//                             [--trace T]... [--interleave N] [--bf16x3] [--bf16] [--mapping NAME]
//                             [--matmul MxKxN,...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/bench_cases.h"
#include "bench/machine.h"
#include "bench/tuner.h"
#include "common/codegen/llvm/jit.h"
#include "common/codegen/llvm/runtime.h"
#include "common/ir/conv.h"
#include "common/ir/reference.h"
#include "common/kernels/prepack.h"
#include "common/kernels/registry.h"
#include "common/target/target.h"
#include "worker/measure.h"

namespace gtco::bench {
namespace {

struct ConvCase {
  const char* name;
  int64_t c, h, k, r, stride, pad;
  int64_t groups = 1;
  int64_t dilation = 1;
};

// ResNet-50 v1.5 (torchvision): the stem, each stage's 1x1 / 3x3 / 1x1 and the strided 3x3s.
const ConvCase kCases[] = {
    {"stem_7x7s2", 3, 224, 64, 7, 2, 3},
    {"l1_1x1_64", 64, 56, 64, 1, 1, 0},
    {"l1_3x3_64", 64, 56, 64, 3, 1, 1},
    {"l1_1x1_256", 64, 56, 256, 1, 1, 0},
    {"l1_1x1_256to64", 256, 56, 64, 1, 1, 0},
    {"l2_3x3s2_128", 128, 56, 128, 3, 2, 1},
    {"l2_3x3_128", 128, 28, 128, 3, 1, 1},
    {"l2_1x1_512to128", 512, 28, 128, 1, 1, 0},
    {"l2_1x1_128to512", 128, 28, 512, 1, 1, 0},
    {"l3_3x3_256", 256, 14, 256, 3, 1, 1},
    {"l3_1x1_1024to256", 1024, 14, 256, 1, 1, 0},
    {"l3_1x1_256to1024", 256, 14, 1024, 1, 1, 0},
    {"l4_3x3_512", 512, 7, 512, 3, 1, 1},
    {"l4_1x1_2048to512", 2048, 7, 512, 1, 1, 0},
    {"l4_1x1_512to2048", 512, 7, 2048, 1, 1, 0},
    // Depthwise (MobileNetV2) and grouped (RegNetY-400MF, 8 channels per group) 3x3 convs.
    {"dw_144x56", 144, 56, 144, 3, 1, 1, 144},
    {"dw_96x112s2", 96, 112, 96, 3, 2, 1, 96},
    {"dw_960x7", 960, 7, 960, 3, 1, 1, 960},
    {"g8_104x28", 104, 28, 104, 3, 1, 1, 13},
    {"g8_104x56s2", 104, 56, 104, 3, 2, 1, 13},
    {"g8_440x7", 440, 7, 440, 3, 1, 1, 55},
    {"1x1_440x7", 440, 7, 440, 1, 1, 0},
    // MobileNetV3-Large's dilated 5x5 in LRASPP, EfficientNet's 5x5 stride 2.
    {"dw5_960x14d2", 960, 14, 960, 5, 1, 4, 960, 2},
    {"dw5_240x28s2", 240, 28, 240, 5, 2, 2, 240},
    // DenseNet-121's growth convs (32 output channels).
    {"dn_3x3_128to32x56", 128, 56, 32, 3, 1, 1},
    {"dn_3x3_128to32x28", 128, 28, 32, 3, 1, 1},
    {"dn_3x3_128to32x7", 128, 7, 32, 3, 1, 1},
    // MobileNetV2's pointwise convs.
    {"mb_1x1_16to96x112", 16, 112, 96, 1, 1, 0},
    {"mb_1x1_144to24x56", 144, 56, 24, 1, 1, 0},
    {"mb_1x1_24to144x56", 24, 56, 144, 1, 1, 0},
    {"mb_1x1_96to576x14", 96, 14, 576, 1, 1, 0},
    {"mb_1x1_576to96x14", 576, 14, 96, 1, 1, 0},
    {"mb_1x1_960to160x7", 960, 7, 160, 1, 1, 0},
    {"mb_1x1_320to1280x7", 320, 7, 1280, 1, 1, 0},
    // SqueezeNet 1.1's 3x3 expand convs and VGG-11's first two 3x3s (few input channels).
    {"sq_3x3_16to64x55", 16, 55, 64, 3, 1, 1},
    {"sq_3x3_32to128x27", 32, 27, 128, 3, 1, 1},
    {"sq_3x3_48to192x13", 48, 13, 192, 3, 1, 1},
    {"vgg_3x3_3to64x224", 3, 224, 64, 3, 1, 1},
    {"vgg_3x3_64to128x112", 64, 112, 128, 3, 1, 1},
};

ir::Workload ConvBiasRelu(const ConvCase& shape, bool residual) {
  ir::ConvParams p;
  p.in_channels = shape.c;
  p.in_h = p.in_w = shape.h;
  p.out_channels = shape.k;
  p.kernel_h = p.kernel_w = shape.r;
  p.stride_h = p.stride_w = shape.stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = shape.pad;
  p.groups = shape.groups;
  p.dilation_h = p.dilation_w = shape.dilation;
  ir::Workload w = ir::MakeConvWorkload(p);
  using K = ir::Operand::Kind;
  const int bias = static_cast<int>(w.inputs.size());
  w.inputs.push_back({ir::DType::kF32, {shape.k, 1, 1}});
  w.epilogue.push_back({ir::EwOp::kAdd, {{K::kAcc, 0, 0}, {K::kInput, bias, 0}}});
  if (residual) {
    const int added = static_cast<int>(w.inputs.size());
    w.inputs.push_back(w.output);
    w.epilogue.push_back({ir::EwOp::kAdd, {{K::kValue, 0, 0}, {K::kInput, added, 0}}});
  }
  w.epilogue.push_back({ir::EwOp::kRelu, {{K::kValue, residual ? 1 : 0, 0}}});
  return w;
}

/// The conv of `shape` as --precision bf16x3 (`parts` 3) or bf16 (`parts` 1) computes it: bf16 X
/// of parts * C channels in the pair layout and bf16 W [K, parts * C, R, S], the same epilogue.
ir::Workload PairsConv(const ConvCase& shape, bool residual, int parts) {
  ir::Workload w = ConvBiasRelu(shape, residual);
  w.conv.in_channels *= parts;
  w.conv.x_pairs = true;
  w.inputs[0] = {ir::DType::kBF16, ir::ConvXShape(w.conv)};
  w.inputs[1] = {ir::DType::kBF16, ir::ConvWShape(w.conv)};
  return w;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// --interleave: `traces` of `w` compiled once each, then run in turn for `rounds` rounds; one
/// table row per trace (median µs, median ratio to the first trace within a round).
int Interleave(const char* name, double gflop, const ir::Workload& w,
               const std::vector<std::string>& traces, int rounds) {
  absl::StatusOr<std::unique_ptr<codegen::CpuJit>> jit = codegen::CpuJit::Create();
  if (!jit.ok()) {
    std::fprintf(stderr, "no JIT: %s\n", jit.status().ToString().c_str());
    return 1;
  }
  const std::vector<std::vector<float>> inputs = ir::RandomInputs(w, 1);
  struct Program {
    codegen::KernelEntry entry;
    std::vector<std::vector<float>> inputs;
    std::vector<float> output;
    std::vector<void*> args;
    std::vector<double> seconds, ratios;
  };
  std::vector<Program> programs(traces.size());
  for (size_t index = 0; index < traces.size(); ++index) {
    absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(traces[index]);
    absl::StatusOr<std::string> ir_text =
        trace.ok() ? ProgramFor(w, *trace, "gtco_kernel") : trace.status();
    absl::StatusOr<codegen::KernelEntry> entry =
        ir_text.ok() ? (*jit)->Compile(*ir_text, "gtco_kernel") : ir_text.status();
    Program& program = programs[index];
    program.inputs = inputs;
    absl::Status packed =
        entry.ok() ? kernels::PackInputsForTrace(w, *trace, &program.inputs) : entry.status();
    if (!packed.ok()) {
      std::fprintf(stderr, "%s: %s\n", traces[index].c_str(), packed.ToString().c_str());
      return 1;
    }
    program.entry = *entry;
    program.output.resize(static_cast<size_t>(w.output.NumElements()));
    for (std::vector<float>& input : program.inputs) program.args.push_back(input.data());
    program.args.push_back(program.output.data());
  }
  using Clock = std::chrono::steady_clock;
  for (int round = -1; round < rounds; ++round) {  // round -1 warms up
    for (Program& program : programs) {
      const Clock::time_point start = Clock::now();
      program.entry(program.args.data());
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (round >= 0) {
        program.seconds.push_back(seconds);
        program.ratios.push_back(seconds / programs[0].seconds.back());
      }
    }
  }
  for (size_t index = 0; index < programs.size(); ++index) {
    const double seconds = Median(programs[index].seconds);
    std::printf("| %s | %.3f | %.1f | %.0f | %.3f | `%s` |\n", name, gflop, seconds * 1e6,
                gflop / seconds, Median(programs[index].ratios), traces[index].c_str());
  }
  return 0;
}

int Main(int argc, char** argv) {
  int trials = 64;
  std::set<std::string> only;
  std::vector<std::string> traces;   // measured as given (diagnostics) instead of tuning
  bool defaults = false;             // measure each mapping's default trace instead of tuning
  bool residual = false;             // a residual added before the ReLU
  int interleave = 0;                // rounds of the --trace programs run in turn
  bool bf16x3 = false;               // also the bf16x3 (AMX, pair layout) form of each conv
  bool bf16 = false;                 // also the bf16 (pair layout) form of each conv
  std::string only_mapping;          // tune this mapping only
  std::vector<std::string> matmuls;  // --matmul: MxKxN shapes compared instead of the convs
  for (int arg = 1; arg < argc; ++arg) {
    if (std::strcmp(argv[arg], "--trials") == 0 && arg + 1 < argc) {
      trials = std::atoi(argv[++arg]);
    } else if (std::strcmp(argv[arg], "--defaults") == 0) {
      defaults = true;
    } else if (std::strcmp(argv[arg], "--residual") == 0) {
      residual = true;
    } else if (std::strcmp(argv[arg], "--bf16x3") == 0) {
      bf16x3 = true;
    } else if (std::strcmp(argv[arg], "--bf16") == 0) {
      bf16 = true;
    } else if (std::strcmp(argv[arg], "--mapping") == 0 && arg + 1 < argc) {
      only_mapping = argv[++arg];
    } else if (std::strcmp(argv[arg], "--trace") == 0 && arg + 1 < argc) {
      traces.push_back(argv[++arg]);
    } else if (std::strcmp(argv[arg], "--interleave") == 0 && arg + 1 < argc) {
      interleave = std::atoi(argv[++arg]);
    } else if (std::strcmp(argv[arg], "--matmul") == 0 && arg + 1 < argc) {
      for (absl::string_view shape : absl::StrSplit(argv[++arg], ',')) matmuls.emplace_back(shape);
    } else if (std::strcmp(argv[arg], "--shapes") == 0 && arg + 1 < argc) {
      for (absl::string_view name : absl::StrSplit(argv[++arg], ',')) only.emplace(name);
    } else {
      std::fprintf(
          stderr,
          "usage: conv_mappings [--trials N] [--shapes name,name,...] [--defaults] "
          "[--residual] [--trace T]... [--interleave N] [--bf16x3] [--bf16] [--mapping NAME]\n");
      return 2;
    }
  }
  if (interleave > 0 && traces.empty()) {
    std::fprintf(stderr, "--interleave compares --trace programs: give at least one\n");
    return 2;
  }
  const target::HardwareInfo hw = target::DetectHostCpu();
  codegen::SetParallelThreads(0, codegen::ThreadPlacement::kPinned);
  if (!matmuls.empty()) {
    if (interleave <= 0) {
      std::fprintf(stderr, "--matmul compares --trace programs: give --interleave N\n");
      return 2;
    }
    std::printf("| matmul | GFLOP | median µs | GFLOP/s | ratio to the first | trace |\n");
    std::printf("|---|---:|---:|---:|---:|---|\n");
    for (const std::string& shape : matmuls) {
      std::vector<int64_t> dims;
      for (absl::string_view dim : absl::StrSplit(shape, 'x'))
        dims.push_back(std::atoll(std::string(dim).c_str()));
      if (dims.size() != 3 || dims[0] < 1 || dims[1] < 1 || dims[2] < 1) {
        std::fprintf(stderr, "--matmul: '%s' is not MxKxN\n", shape.c_str());
        return 2;
      }
      const double gflop = 2e-9 * static_cast<double>(dims[0] * dims[1] * dims[2]);
      if (Interleave(shape.c_str(), gflop, MatMulWorkload(1, dims[0], dims[1], dims[2]), traces,
                     interleave) != 0) {
        return 1;
      }
    }
    return 0;
  }
  absl::StatusOr<std::unique_ptr<worker::CandidateMeasurer>> measurer =
      worker::CandidateMeasurer::Create(worker::MeasureOptions{});
  if (!measurer.ok()) {
    std::fprintf(stderr, "no measurer: %s\n", measurer.status().ToString().c_str());
    return 1;
  }
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("# ResNet-50's convolutions under each CPU conv mapping\n\n");
  std::string command = "build/bench/conv_mappings";
  for (int arg = 1; arg < argc; ++arg) command += std::string(" ") + argv[arg];
  std::printf(
      "Machine: %s; %s; `%s`. Batch 1, each conv with its fused bias%s and ReLU, %s, every "
      "candidate verified and timed by the worker's measurer with the weights evicted from the "
      "caches, threads: all cores, each pinned to one.\n\n",
      (hw.Summary() + ", " + CpuFamilyModel()).c_str(), date, command.c_str(),
      residual ? ", a residual" : "",
      defaults ? "each mapping's default trace (nothing tuned)"
               : absl::StrCat("tuned under one mapping at a time with ", trials,
                              " trials (evolutionary search, the 8 fastest re-measured twice)")
                     .c_str());
  std::printf("| conv | GFLOP | mapping | best µs | GFLOP/s | best trace |\n");
  std::printf("|---|---:|---|---:|---:|---|\n");
  for (const ConvCase& shape : kCases) {
    if (!only.empty() && only.count(shape.name) == 0) continue;
    const ir::Workload w = ConvBiasRelu(shape, residual);
    if (interleave > 0) {
      // With --bf16x3 / --bf16 the traces are of the conv as that precision computes it (pair
      // layout).
      if (Interleave(shape.name, static_cast<double>(ir::ConvFlops(w.conv)) * 1e-9,
                     bf16x3 ? PairsConv(shape, residual, 3)
                     : bf16 ? PairsConv(shape, residual, 1)
                            : w,
                     traces, interleave) != 0) {
        return 1;
      }
      continue;
    }
    const double gflop = static_cast<double>(ir::ConvFlops(w.conv)) * 1e-9;
    absl::StatusOr<std::vector<schedule::SearchSpace>> spaces = kernels::CreateMappingSpaces(w, hw);
    if (!spaces.ok()) {
      std::fprintf(stderr, "%s: %s\n", shape.name, spaces.status().ToString().c_str());
      return 1;
    }
    std::vector<std::pair<ir::Workload, std::string>> to_measure;
    for (const std::string& text : traces) to_measure.push_back({w, text});
    if (defaults) {
      for (const schedule::SearchSpace& space : *spaces) {
        to_measure.push_back({w, space.DefaultTrace().ToString()});
      }
      if (bf16 && shape.c % 2 == 0 && shape.groups == 1 && shape.dilation == 1) {
        const ir::Workload pairs = PairsConv(shape, residual, 1);
        absl::StatusOr<std::vector<schedule::SearchSpace>> pair_spaces =
            kernels::CreateMappingSpaces(pairs, hw);
        for (const schedule::SearchSpace& space :
             pair_spaces.ok() ? *pair_spaces : std::vector<schedule::SearchSpace>()) {
          to_measure.push_back({pairs, space.DefaultTrace().ToString()});
        }
      }
    }
    for (const auto& [work, text] : to_measure) {
      absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(text);
      absl::StatusOr<std::string> program =
          trace.ok() ? ProgramFor(work, *trace, "gtco_kernel") : trace.status();
      if (!program.ok()) {
        std::printf("| %s | %.3f | - | %s | | `%s` |\n", shape.name, gflop,
                    std::string(program.status().message()).c_str(), text.c_str());
        continue;
      }
      if (const char* dump = std::getenv("GTCO_DUMP_IR")) {  // the LLVM IR, for llc / inspection
        std::FILE* file = std::fopen(dump, "w");
        if (file != nullptr) {
          std::fputs(program->c_str(), file);
          std::fclose(file);
        }
      }
      gtco::v1::Candidate candidate;
      candidate.set_candidate_id("1");
      candidate.set_workload_key(work.Key());
      candidate.set_workload(work.CanonicalString());
      candidate.set_entry("gtco_kernel");
      candidate.set_program(*program);
      candidate.set_trace(text);
      const gtco::v1::MeasureResult result = (*measurer)->Measure(candidate);
      std::printf("| %s | %.3f | - | %s | %.0f | `%s` |\n", shape.name, gflop,
                  result.ok() ? absl::StrCat(result.median_seconds() * 1e6).c_str()
                              : result.error().c_str(),
                  result.ok() ? gflop / result.median_seconds() : 0.0, text.c_str());
    }
    if (!to_measure.empty()) continue;
    std::vector<std::pair<ir::Workload, schedule::SearchSpace>> tuned;
    for (const schedule::SearchSpace& space : *spaces) tuned.push_back({w, space});
    if (((bf16x3 && shape.c % 32 == 0) || (bf16 && shape.c % 2 == 0)) && shape.groups == 1 &&
        shape.dilation == 1) {
      const ir::Workload split = PairsConv(shape, residual, bf16x3 ? 3 : 1);
      absl::StatusOr<std::vector<schedule::SearchSpace>> split_spaces =
          kernels::CreateMappingSpaces(split, hw);
      if (!split_spaces.ok()) {
        std::printf("| %s | %.3f | bf16x3 | %s | | |\n", shape.name, gflop,
                    std::string(split_spaces.status().message()).c_str());
      } else {
        for (const schedule::SearchSpace& space : *split_spaces) tuned.push_back({split, space});
      }
    }
    for (const auto& [work, space] : tuned) {
      if (!only_mapping.empty() && space.mapping() != only_mapping) continue;
      TuneOptions options;
      options.trials = trials;
      options.mapping = space.mapping();
      absl::StatusOr<TuneResult> result = Tune(work, hw, options, **measurer);
      if (!result.ok() || result->best_seconds == 0) {
        std::printf("| %s | %.3f | %s | failed | | %s |\n", shape.name, gflop,
                    options.mapping.c_str(),
                    result.ok() ? result->first_error.c_str()
                                : std::string(result.status().message()).c_str());
        continue;
      }
      std::printf("| %s | %.3f | %s%s | %.1f | %.0f | `%s` |\n", shape.name, gflop,
                  options.mapping.c_str(),
                  !work.conv.x_pairs ? ""
                  : bf16x3           ? " (bf16x3)"
                                     : " (bf16)",
                  result->best_seconds * 1e6, gflop / result->best_seconds,
                  result->best_trace.ToString().c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace gtco::bench

int main(int argc, char** argv) { return gtco::bench::Main(argc, argv); }
