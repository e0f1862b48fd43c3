// bf16 and int8 GEMMs side by side in one run: GTCO's AMX mappings (amx_bf16, amx_int8) and its
// AVX-512 ones (avx512_bf16, avx512_vnni), each tuned in-process exactly as the farm measures
// candidates, against oneDNN's matmul primitive on the same operands (oneDNN picks AMX itself
// where the CPU has it), with the weights row-major as given and pre-reordered into oneDNN's own
// layout once. Shapes: the BERT-base and ViT-B/16 GEMMs, 512^3 and 4096^3. Every output is
// checked against oneDNN's (int8 exactly). Writes a markdown table (--out) and prints it.
//
//   lowp_vs_onednn [--trials N] [--shapes id,id] [--dtypes bf16,int8] [--rounds R] [--out F]
//                  [--trace T]...   (measure these traces of the selected shapes, no tuning)
// GTCO_DUMP_IR=FILE writes the LLVM IR of the last program compiled.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/machine.h"
#include "bench/timing.h"
#include "bench/tuner.h"
#include "bench/vendor_baselines.h"
#include "common/codegen/llvm/jit.h"
#include "common/codegen/llvm/runtime.h"
#include "common/ir/reference.h"
#include "common/kernels/cpu/matmul_lowp/matmul_lowp_sketch.h"
#include "common/kernels/prepack.h"
#include "common/kernels/registry.h"
#include "common/target/target.h"
#include "worker/measure.h"

namespace gtco::bench {
namespace {

struct Shape {
  const char* id;
  int64_t m, k, n;
};

const Shape kShapes[] = {
    {"bert_attn_out", 128, 768, 768},
    {"bert_ffn1", 128, 768, 3072},
    {"bert_ffn2", 128, 3072, 768},
    {"vit_qkv", 197, 768, 2304},
    {"vit_proj", 197, 768, 768},
    {"vit_ffn1", 197, 768, 3072},
    {"vit_ffn2", 197, 3072, 768},
    {"mm512", 512, 512, 512},
    {"mm4096", 4096, 4096, 4096},
    // MiniLM-L6 (all-MiniLM-L6-v2's shape: hidden 384, FFN 1536) at sequence length 128.
    {"minilm_proj", 128, 384, 384},
    {"minilm_ffn1", 128, 384, 1536},
    {"minilm_ffn2", 128, 1536, 384},
    // --precision bf16x3's weight matmuls: K tripled ([A_hi | A_lo | A_hi] x [B_hi; B_hi; B_lo]).
    {"vit_ffn2_x3", 197, 9216, 768},
    {"vit_ffn1_x3", 197, 2304, 3072},
    {"bert_ffn2_x3", 128, 9216, 768},
};

/// A [m, k] x [k, n] matmul: bf16 x bf16 -> f32, or u8 x s8 -> s32.
ir::Workload LowpGemm(const Shape& shape, bool bf16) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kMatMul;
  w.matmul.batch = 1;
  w.matmul.m = shape.m;
  w.matmul.k = shape.k;
  w.matmul.n = shape.n;
  w.inputs = {{bf16 ? ir::DType::kBF16 : ir::DType::kU8, {shape.m, shape.k}},
              {bf16 ? ir::DType::kBF16 : ir::DType::kI8, {shape.k, shape.n}}};
  w.num_anchor_inputs = 2;
  w.output = {bf16 ? ir::DType::kF32 : ir::DType::kI32, {shape.m, shape.n}};
  return w;
}

struct Implementation {
  std::string name;
  std::string trace;  ///< ours: the tuned trace
  std::function<void()> run;
  ir::TypedBuffer output;
  std::string check = "ok";
};

std::string HostLine(const target::HardwareInfo& hw) {
  std::vector<std::string> flags;
  for (const std::string& flag : hw.cpu_features) {
    if (flag.rfind("amx", 0) == 0 || flag.rfind("avx512_bf16", 0) == 0 || flag == "avx512_vnni" ||
        flag == "avx512f") {
      flags.push_back(flag);
    }
  }
  return absl::StrCat(hw.cpu_model, " (", CpuFamilyModel(), "), ", hw.cores, " cores; ",
                      absl::StrJoin(flags, " "));
}

int Main(int argc, char** argv) {
  int trials = 48, rounds = 5;
  std::set<std::string> only, dtypes = {"bf16", "int8"};
  std::string out_path;
  std::vector<std::string> given_traces;
  for (int arg = 1; arg < argc; ++arg) {
    if (std::strcmp(argv[arg], "--trials") == 0 && arg + 1 < argc) {
      trials = std::atoi(argv[++arg]);
    } else if (std::strcmp(argv[arg], "--rounds") == 0 && arg + 1 < argc) {
      rounds = std::atoi(argv[++arg]);
    } else if (std::strcmp(argv[arg], "--shapes") == 0 && arg + 1 < argc) {
      for (absl::string_view id : absl::StrSplit(argv[++arg], ',')) only.emplace(id);
    } else if (std::strcmp(argv[arg], "--dtypes") == 0 && arg + 1 < argc) {
      dtypes.clear();
      for (absl::string_view id : absl::StrSplit(argv[++arg], ',')) dtypes.emplace(id);
    } else if (std::strcmp(argv[arg], "--trace") == 0 && arg + 1 < argc) {
      given_traces.push_back(argv[++arg]);
    } else if (std::strcmp(argv[arg], "--out") == 0 && arg + 1 < argc) {
      out_path = argv[++arg];
    } else {
      std::fprintf(stderr,
                   "usage: lowp_vs_onednn [--trials N] [--shapes id,id,...] [--dtypes bf16,int8] "
                   "[--rounds R] [--out FILE] [--trace T]...\n");
      return 2;
    }
  }
  const int threads = 2;
  codegen::SetParallelThreads(threads);
  SetOneDnnThreads(threads);
  const target::HardwareInfo hw = target::DetectHostCpu();
  worker::MeasureOptions measure_options;
  measure_options.seed = 1;
  absl::StatusOr<std::unique_ptr<worker::CandidateMeasurer>> measurer =
      worker::CandidateMeasurer::Create(measure_options);
  absl::StatusOr<std::unique_ptr<codegen::CpuJit>> jit = codegen::CpuJit::Create();
  if (!measurer.ok() || !jit.ok()) {
    std::fprintf(stderr, "no JIT: %s\n",
                 (measurer.ok() ? jit.status() : measurer.status()).ToString().c_str());
    return 1;
  }
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", std::gmtime(&now));
  std::string report = absl::StrCat(
      "# bf16 and int8 GEMMs: GTCO (AMX and AVX-512 mappings) vs oneDNN\n\n",
      "- CPU: ", HostLine(hw), "\n- Date (UTC): ", date, "\n- oneDNN: ", OneDnnVersion(),
      "\n- Threads: ", threads, " for every implementation (OMP_WAIT_POLICY=",
      std::getenv("OMP_WAIT_POLICY") != nullptr ? std::getenv("OMP_WAIT_POLICY") : "unset",
      ": oneDNN's idle OpenMP threads spin unless PASSIVE, taking the cores from the runs "
      "after its own)\n- Command: `lowp_vs_onednn",
      absl::StrCat(" --trials ", trials, " --rounds ", rounds), "`\n",
      "- Ours: each mapping tuned in-process with ", trials,
      " measured trials (worker::CandidateMeasurer, as the farm measures); a trace with pack_b=2 "
      "(the AMX mappings' and the AVX-512 ones' default) reads B pre-packed once into the "
      "16-column tile layout, as exported; pack_b=1 packs it in every call; oneDNN: its matmul "
      "primitive with the weights row-major (packed inside "
      "each call) and pre-reordered once into its own layout (`any`)\n",
      "- Latencies: medians of ", rounds,
      " interleaved rounds; ratios are oneDNN's time over ours (>1: ours faster). Outputs "
      "checked against oneDNN's (int8 exactly)\n\n",
      "| case | M×K×N | dtype | ours AMX µs | ours AVX-512 µs | oneDNN µs | oneDNN pre-packed µs | "
      "ours best G(FL)OP/s | oneDNN pre-packed G(FL)OP/s | vs oneDNN | vs oneDNN pre-packed | "
      "our best trace |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::printf("%s", report.c_str());
  std::fflush(stdout);
  for (const Shape& shape : kShapes) {
    if (!only.empty() && !only.count(shape.id)) continue;
    for (const bool bf16 : {true, false}) {
      if (!dtypes.count(bf16 ? "bf16" : "int8")) continue;
      const ir::Workload w = LowpGemm(shape, bf16);
      const std::vector<ir::TypedBuffer> inputs = ir::RandomTypedInputs(w, 3);
      std::vector<Implementation> impls;
      std::vector<std::vector<ir::TypedBuffer>> owned;  // per implementation's inputs
      std::vector<std::vector<void*>> args(given_traces.size() + 4);
      owned.reserve(args.size());
      std::vector<std::pair<std::string, std::string>> ours_to_time;  // (name, trace)
      for (const std::string& text : given_traces) {
        if (text.rfind(bf16 ? "mm_amx_bf16" : "mm_amx_int8", 0) == 0 ||
            text.rfind(bf16 ? "mm_avx512_bf16" : "mm_avx512_vnni", 0) == 0) {
          ours_to_time.push_back(
              {text.find("amx") != std::string::npos
                   ? (bf16 ? kernels::kAmxBf16Mapping : kernels::kAmxInt8Mapping)
                   : (bf16 ? kernels::kAvx512Bf16Mapping : kernels::kAvx512VnniMapping),
               text});
        }
      }
      for (const char* mapping :
           {bf16 ? kernels::kAmxBf16Mapping : kernels::kAmxInt8Mapping,
            bf16 ? kernels::kAvx512Bf16Mapping : kernels::kAvx512VnniMapping}) {
        if (!given_traces.empty()) break;
        TuneOptions options;
        options.trials = trials;
        options.kind = SearchKind::kRandom;
        options.mapping = mapping;
        absl::StatusOr<TuneResult> tuned = Tune(w, hw, options, **measurer);
        if (!tuned.ok() || tuned->best_seconds == 0) {
          std::fprintf(stderr, "%s %s: %s\n", shape.id, mapping,
                       tuned.ok() ? tuned->first_error.c_str()
                                  : std::string(tuned.status().message()).c_str());
          continue;
        }
        ours_to_time.push_back({mapping, tuned->best_trace.ToString()});
      }
      for (const auto& [mapping, trace_text] : ours_to_time) {
        Implementation impl;
        impl.name = mapping;
        impl.trace = trace_text;
        absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(trace_text);
        absl::StatusOr<std::string> program =
            trace.ok() ? ProgramFor(w, *trace, "gtco_kernel") : trace.status();
        if (const char* dump = std::getenv("GTCO_DUMP_IR"); dump != nullptr && program.ok()) {
          std::ofstream(dump) << *program;  // the LLVM IR, for llc / inspection
        }
        absl::StatusOr<codegen::KernelEntry> entry =
            program.ok() ? (*jit)->Compile(*program, "gtco_kernel") : program.status();
        if (!entry.ok()) {
          std::fprintf(stderr, "%s %s: %s\n", shape.id, mapping.c_str(),
                       entry.status().ToString().c_str());
          continue;
        }
        owned.push_back(inputs);
        if (kernels::ReadsPrepackedInput(*trace)) {  // B pre-packed once, as exported
          std::vector<std::vector<float>> values;
          for (const ir::TypedBuffer& buffer : inputs) values.push_back(buffer.ToFloats());
          const absl::Status packed = kernels::PackInputsForTrace(w, *trace, &values);
          if (!packed.ok()) {
            std::fprintf(stderr, "%s: %s\n", shape.id, packed.ToString().c_str());
            return 1;
          }
          owned.back()[1] = ir::TypedBuffer::FromValues(w.inputs[1].dtype, values[1]);
        }
        impl.output = ir::TypedBuffer(w.output.dtype, w.output.NumElements());
        impls.push_back(std::move(impl));
        std::vector<void*>& call = args[impls.size() - 1];
        for (ir::TypedBuffer& buffer : owned.back()) call.push_back(buffer.data());
        call.push_back(impls.back().output.data());
        const codegen::KernelEntry kernel = *entry;
        impls.back().run = [kernel, &call] { kernel(call.data()); };
      }
      const size_t ours = impls.size();
      for (const bool prepacked : {false, true}) {
        Implementation impl;
        impl.name = prepacked ? "onednn_prepacked" : "onednn";
        owned.push_back(inputs);
        impl.output = ir::TypedBuffer(w.output.dtype, w.output.NumElements());
        absl::StatusOr<VendorRun> run = MakeOneDnnLowpMatMulRun(
            w, {owned.back()[0].data(), owned.back()[1].data()}, impl.output.data(), prepacked);
        if (!run.ok()) {
          std::fprintf(stderr, "%s: %s\n", shape.id, run.status().ToString().c_str());
          return 1;
        }
        impl.run = *run;
        impls.push_back(std::move(impl));
      }
      std::vector<std::function<void()>> runs;
      for (Implementation& impl : impls) {
        impl.run();  // once, for the check
        runs.push_back(impl.run);
      }
      double rtol = 0, atol = 0;
      ir::DefaultTolerance(w, &rtol, &atol);
      for (size_t index = 0; index < ours; ++index) {
        const absl::Status match =
            ir::CompareTypedOutputs(impls[ours].output, impls[index].output, rtol, atol);
        if (!match.ok()) impls[index].check = std::string(match.message());
      }
      const std::vector<TimingStats> stats = TimeBackToBack(runs, rounds, 0.1);
      auto micros = [&](const std::string& name) -> std::string {
        for (size_t index = 0; index < impls.size(); ++index) {
          if (impls[index].name == name) {
            return impls[index].check == "ok" ? absl::StrFormat("%.1f", stats[index].median * 1e6)
                                              : absl::StrCat("wrong: ", impls[index].check);
          }
        }
        return "n/a";
      };
      if (!given_traces.empty()) {
        // Each given trace's own time (the table keeps the best), and as the farm measures it.
        for (size_t index = 0; index < ours; ++index) {
          absl::StatusOr<schedule::Trace> trace = schedule::Trace::Parse(impls[index].trace);
          const gtco::v1::MeasureResult farm =
              MeasureTrace(w, *trace, static_cast<int>(index), **measurer);
          std::printf("%s %s: %s µs warm, %s µs as the farm measures (weights evicted)\n", shape.id,
                      impls[index].trace.c_str(),
                      impls[index].check == "ok"
                          ? absl::StrFormat("%.1f", stats[index].median * 1e6).c_str()
                          : impls[index].check.c_str(),
                      farm.ok() ? absl::StrFormat("%.1f", farm.median_seconds() * 1e6).c_str()
                                : farm.error().c_str());
        }
      }
      double best_ours = 0, onednn = stats[ours].median, prepacked = stats[ours + 1].median;
      std::string best_trace = "n/a";
      for (size_t index = 0; index < ours; ++index) {
        if (impls[index].check != "ok") continue;
        if (best_ours == 0 || stats[index].median < best_ours) {
          best_ours = stats[index].median;
          best_trace = impls[index].trace;
        }
      }
      const double ops = 2.0 * static_cast<double>(shape.m * shape.k * shape.n);
      const std::string row = absl::StrFormat(
          "| %s | %d×%d×%d | %s | %s | %s | %s | %s | %s | %.0f | %s | %s | `%s` |\n", shape.id,
          shape.m, shape.k, shape.n, bf16 ? "bf16" : "u8×s8",
          micros(bf16 ? "amx_bf16" : "amx_int8"), micros(bf16 ? "avx512_bf16" : "avx512_vnni"),
          micros("onednn"), micros("onednn_prepacked"),
          best_ours > 0 ? absl::StrFormat("%.0f", ops / best_ours / 1e9) : "n/a",
          ops / prepacked / 1e9,
          best_ours > 0 ? absl::StrFormat("%.2f×", onednn / best_ours) : "n/a",
          best_ours > 0 ? absl::StrFormat("%.2f×", prepacked / best_ours) : "n/a", best_trace);
      std::printf("%s", row.c_str());
      std::fflush(stdout);
      report += row;
    }
  }
  if (!out_path.empty()) {
    std::ofstream(out_path) << report;
    std::printf("wrote %s\n", out_path.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace gtco::bench

int main(int argc, char** argv) { return gtco::bench::Main(argc, argv); }
