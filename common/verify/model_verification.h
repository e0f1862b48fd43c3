// Whole-model verification at export: the artifact, run in this process through the runtime,
// against the reference interpreter of the original ONNX graph on the same inputs (random ones
// and any the user gives), every output compared within a per-dtype, per-precision tolerance.
// On a mismatch, both run again keeping every intermediate tensor, and the first step of the
// artifact whose output diverges from the reference's tensor of the same name is named.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/onnx/onnx_import.h"
#include "common/verify/reference_interpreter.h"
#include "runtime/artifact.h"

namespace gtco::verify {

/// The seed of the random inputs unless one is given.
inline constexpr uint64_t kDefaultSeed = 20261207;

struct VerifyOptions {
  uint64_t seed = kDefaultSeed;
  int random_sets = 1;  ///< sets of random inputs
  /// Input sets the user gave (--verify-input), each a value per graph input it names; inputs it
  /// does not name get random values.
  std::vector<ValueMap> user_sets;
  /// Times the artifact's fallback ("reference") steps against the whole run (Profile).
  bool profile_fallbacks = true;
};

/// A fallback step's measured time.
struct FallbackTime {
  std::string op_type, node;
  double seconds = 0;
};

struct VerifyReport {
  /// status "passed" or "skipped" (reason set), with the seed, sets and per-output errors.
  runtime::VerificationSpec spec;
  bool passed = false;
  /// On a mismatch: which output, by how much, and the first diverging node.
  std::string failure;
  std::string diverging_node;  ///< the node named in `failure` ("" when none could be told)
  /// The fallback steps' times in a profiled run (median of three), and the whole run's.
  std::vector<FallbackTime> fallbacks;
  double run_seconds = 0;
};

/// The tolerance rule of a graph (as imported): max |artifact - reference| / max |reference|
/// per float output: 1e-4 for an f32 model, 4e-2 where the graph holds bf16 or f16 tensors,
/// 6e-2 where it quantizes to 8 bits; integer and bool outputs: at most 1 % of elements differ.
double ToleranceFor(const graph::Graph& graph, runtime::ElemType output_type);
std::string ToleranceRule(const graph::Graph& graph);

/// max |artifact - reference| / max |reference| (1 where it is 0) for floats, the fraction of
/// elements that differ for integers and bool; infinity where a shape differs or one side holds
/// NaN where the other does not.
double RelativeError(const Value& artifact, const Value& reference);

/// Random inputs for every graph input of `graph` from `seed`: floats uniform in [-1, 1);
/// integers that index a Gather (directly or through casts and reshapes) in [0, the gathered
/// extent), other integers 1 (attention masks); bool random.
ValueMap RandomInputs(const graph::Graph& graph, uint64_t seed);

/// Sets the integer inputs of `graph` in `values` that set shapes (a Reshape's shape, Unsqueeze's
/// axes...), which an artifact fixes at export, to what the graph's static shapes imply (a
/// Reshape's or Expand's shape: its output's shape), except those in `given` (may be null).
/// Returns the name of one whose value cannot be told from the shapes, nullopt when none.
std::optional<std::string> FillShapeInputs(const graph::Graph& graph, ValueMap* values,
                                           const ValueMap* given);

/// Checks `artifact` (the .gtco bytes exported from `model_bytes` with `overrides`). Skipped
/// (spec.status "skipped", a reason) when this host cannot run it (another instruction set, a
/// CUDA artifact without a GPU). Errors: those of the import, of the reference interpreter
/// (naming the node it cannot run), and of the artifact's run.
absl::StatusOr<VerifyReport> VerifyArtifact(std::string_view model_bytes,
                                            const onnx::ShapeOverrides& overrides,
                                            const std::string& artifact,
                                            const VerifyOptions& options);

}  // namespace gtco::verify
