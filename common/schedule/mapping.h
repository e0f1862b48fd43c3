// Intrinsic mappings: how a workload class is mapped onto a machine's vector instructions
// ("avx512_fma", "avx2_fma", "vector", ...). Each mapping owns one versioned sketch and says,
// with a reason, whether it applies to a (workload, hardware) pair. The registry
// (common/kernels/registry.h) lists every mapping in a stable order, best-expected first; each
// search space is one mapping's space.
#pragma once

#include <string>
#include <vector>

#include "common/ir/workload.h"
#include "common/schedule/sketch.h"
#include "common/target/target.h"

namespace gtco::schedule {

/// Whether one mapping applies to (workload, hardware), and why (not).
struct MappingVerdict {
  std::string mapping;  ///< the mapping's name, e.g. "avx512_fma"
  bool applies = false;
  std::string reason;  ///< e.g. "needs CPU feature avx512f", "f32 inputs, avx2+fma present"
};

/// One intrinsic mapping of a workload class. Stateless; implementations are singletons.
class MappingSketch {
 public:
  virtual ~MappingSketch() = default;
  /// Stable mapping name stored with search decisions, e.g. "avx512_fma". Several workload
  /// classes may share a name (every row workload has a "vector" mapping).
  virtual const char* Name() const = 0;
  /// The target whose workers run this mapping's programs: "cpu" (loop IR -> LLVM) or "cuda"
  /// (CUDA C, see cuda_sketch.h). Spaces and verdicts only consider mappings of hw.target.
  virtual target::Target Target() const { return target::Target::kCpu; }
  /// The sketch the mapping's search space samples (its traces name this sketch).
  virtual const Sketch& sketch() const = 0;
  /// Whether the mapping is about `w`'s workload class at all (only those are explained).
  virtual bool Considers(const ir::Workload& w) const { return sketch().AppliesTo(w); }
  /// The verdict for (w, hw); only called when Considers(w).
  virtual MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const = 0;
  /// Where the mapping stands among those that apply to (w, hw): lower first, ties in registry
  /// order. The first is the best-expected one: what an untuned export runs and where a task's
  /// first trials go. Only called when the mapping applies.
  virtual int Rank(const ir::Workload& /*w*/, const target::HardwareInfo& /*hw*/) const {
    return 0;
  }
};

/// True when `mapping` is about `w`'s workload class on `hw`'s target.
bool MappingConsiders(const MappingSketch& mapping, const ir::Workload& w,
                      const target::HardwareInfo& hw);

/// Verdict helpers for mapping implementations.
/// Empty when `hw` has every feature of `features`, else "needs CPU feature(s) x, y".
std::string MissingCpuFeatures(const target::HardwareInfo& hw,
                               const std::vector<std::string>& features);
/// Empty when every input and the output of `w` is f32, else "needs f32 operands (in1 is bf16)".
std::string NonF32Operands(const ir::Workload& w);

/// The single "vector" mapping of a row-wise or element-wise sketch: any CPU, f32 operands.
class VectorMapping final : public MappingSketch {
 public:
  explicit VectorMapping(const Sketch& sketch) : sketch_(sketch) {}
  const char* Name() const override { return "vector"; }
  const Sketch& sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override;

 private:
  const Sketch& sketch_;
};

}  // namespace gtco::schedule
