// Fusion planner: region growth from anchors and element-wise seeds, then workload building.
#include "common/graph/fusion_planner.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/graph/anchor_lowering.h"
#include "common/graph/attention_fusion.h"
#include "common/graph/op_support.h"
#include "common/util/status.h"

namespace gtco::graph {
namespace {

using Shape = std::vector<int64_t>;

/// A candidate fused subgraph: `seed` is the anchor's node index (anchored) or the first
/// element-wise node (then also members[0]); members are element-wise nodes in join order.
struct Region {
  int seed = 0;
  bool anchored = false;
  std::vector<int> members;
  int attention = -1;  ///< index of the attention match whose final MatMul is `seed`, or -1
};

/// Orders the operands of commutative ops (acc, values, inputs, constants) so that
/// `bias + x` and `x + bias` give the same workload.
void CanonicalizeOperands(ir::EwInstr& instr) {
  if (instr.op != ir::EwOp::kAdd && instr.op != ir::EwOp::kMul && instr.op != ir::EwOp::kMax &&
      instr.op != ir::EwOp::kMin) {
    return;
  }
  auto rank = [](const ir::Operand& operand) {
    int kind_rank = 0;
    switch (operand.kind) {
      case ir::Operand::Kind::kAcc:
        kind_rank = 0;
        break;
      case ir::Operand::Kind::kValue:
        kind_rank = 1;
        break;
      case ir::Operand::Kind::kInput:
        kind_rank = 2;
        break;
      case ir::Operand::Kind::kConst:
        kind_rank = 3;
        break;
    }
    return std::make_tuple(kind_rank, operand.index, operand.value);
  };
  std::sort(instr.args.begin(), instr.args.end(),
            [&](const ir::Operand& a, const ir::Operand& b) { return rank(a) < rank(b); });
}

class Planner {
 public:
  Planner(const Graph& graph, const PlanOptions& options)
      : graph_(graph),
        consumers_(graph.ConsumerMap()),
        assigned_(graph.nodes.size(), false) {
    if (options.target == target::Target::kCuda) {
      attention_ = FindAttentionPatterns(graph);
    } else if (options.fuse_attention) {
      // The CPU kernel (cpu/attention) adds masks and streams K^T as the model stores it.
      AttentionOptions cpu;
      cpu.allow_mask = true;
      cpu.absorb_k_transpose = false;
      attention_ = FindAttentionPatterns(graph, cpu);
    }
    for (size_t match_idx = 0; match_idx < attention_.size(); ++match_idx) {
      attention_at_[attention_[match_idx].final_matmul] = static_cast<int>(match_idx);
      for (int node : attention_[match_idx].nodes) assigned_[node] = true;
    }
  }

  absl::StatusOr<std::vector<PlannedWorkload>> Run() {
    std::vector<Region> regions;
    for (int index = 0; index < NumNodes(); ++index) {
      if (RoleOf(graph_.nodes[index]) != OpRole::kAnchor) continue;
      if (auto it = attention_at_.find(index); it != attention_at_.end()) {
        const AnchorHead head = AttentionHead(attention_[it->second], graph_);
        regions.push_back(Grow(index, /*anchored=*/true, &head));
        regions.back().attention = it->second;
        continue;
      }
      if (assigned_[index]) continue;  // inside an attention pattern
      GTCO_ASSIGN_OR_RETURN(AnchorHead head, LowerAnchor(graph_.nodes[index], graph_));
      regions.push_back(Grow(index, /*anchored=*/true, &head));
    }
    for (int index = 0; index < NumNodes(); ++index) {
      if (assigned_[index] || RoleOf(graph_.nodes[index]) != OpRole::kElementwise) continue;
      regions.push_back(Grow(index, /*anchored=*/false, nullptr));
    }
    std::sort(regions.begin(), regions.end(),
              [](const Region& a, const Region& b) { return a.seed < b.seed; });
    std::vector<PlannedWorkload> planned;
    for (const Region& region : regions) {
      GTCO_ASSIGN_OR_RETURN(PlannedWorkload workload, Build(region));
      planned.push_back(std::move(workload));
    }
    return planned;
  }

 private:
  int NumNodes() const { return static_cast<int>(graph_.nodes.size()); }
  const std::string& OutputOf(int index) const { return graph_.nodes[index].outputs.at(0); }
  const Shape& ShapeOf(const std::string& tensor) const { return graph_.tensor(tensor).shape; }

  /// Whether an extra (non-region) input fits the region's broadcast rule.
  bool AcceptsExtra(const std::string& tensor, const AnchorHead* head) const {
    if (head == nullptr) return true;  // anchorless chains: any numpy broadcast
    return AnchorExtraShape(*head, ShapeOf(tensor)).has_value();
  }

  /// Whether `index` can join a region holding `region_tensors`, given the tensors that
  /// depend on the seed.
  bool CanJoin(int index, const Shape& out_shape, const std::set<std::string>& region_tensors,
               const std::set<std::string>& depends, const AnchorHead* head) const {
    const Node& node = graph_.nodes[index];
    if (assigned_[index] || RoleOf(node) != OpRole::kElementwise || node.outputs.size() != 1 ||
        ShapeOf(node.outputs[0]) != out_shape) {
      return false;
    }
    bool touches = false;
    for (const std::string& input : node.inputs) {
      if (region_tensors.count(input)) {
        touches = true;
      } else if (depends.count(input) || !AcceptsExtra(input, head)) {
        return false;
      }
    }
    return touches;
  }

  /// Grows the region of `seed` over the element-wise nodes after it, then trims it until a
  /// single tensor escapes; marks its nodes as assigned.
  Region Grow(int seed, bool anchored, const AnchorHead* head) {
    Region region{seed, anchored, {}};
    if (!anchored) region.members.push_back(seed);
    const std::string& seed_output = OutputOf(seed);
    const Shape& out_shape = ShapeOf(seed_output);
    std::set<std::string> region_tensors = {seed_output}, depends = {seed_output};
    int last_reader = LastConsumer(seed_output);
    for (int index = seed + 1; index < NumNodes() && index <= last_reader; ++index) {
      const Node& node = graph_.nodes[index];
      bool reads_dependent = std::any_of(node.inputs.begin(), node.inputs.end(),
                                         [&](const std::string& in) { return depends.count(in); });
      if (!reads_dependent) continue;
      if (CanJoin(index, out_shape, region_tensors, depends, head)) {
        region.members.push_back(index);
        region_tensors.insert(node.outputs[0]);
        last_reader = std::max(last_reader, LastConsumer(node.outputs[0]));
      }
      for (const std::string& output : node.outputs) depends.insert(output);
    }
    size_t keep_at_least = anchored ? 0 : 1;
    while (region.members.size() > keep_at_least && !HasSingleExit(region)) {
      region.members.pop_back();
    }
    assigned_[seed] = true;
    for (int member : region.members) assigned_[member] = true;
    return region;
  }

  int LastConsumer(const std::string& tensor) const {
    auto it = consumers_.find(tensor);
    return it == consumers_.end() || it->second.empty() ? -1 : it->second.back();
  }

  bool Escapes(const std::string& tensor, const std::set<int>& nodes) const {
    if (std::find(graph_.outputs.begin(), graph_.outputs.end(), tensor) != graph_.outputs.end()) {
      return true;
    }
    auto it = consumers_.find(tensor);
    if (it == consumers_.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](int consumer) { return !nodes.count(consumer); });
  }

  /// True when no region tensor but the final one is read outside the region.
  bool HasSingleExit(const Region& region) const {
    std::set<int> nodes(region.members.begin(), region.members.end());
    nodes.insert(region.seed);
    const std::string& final_output =
        region.members.empty() ? OutputOf(region.seed) : OutputOf(region.members.back());
    for (int index : nodes) {
      const std::string& output = OutputOf(index);
      if (output != final_output && Escapes(output, nodes)) return false;
    }
    return true;
  }

  absl::StatusOr<PlannedWorkload> Build(const Region& region) const;

  const Graph& graph_;
  std::map<std::string, std::vector<int>> consumers_;
  std::vector<bool> assigned_;
  std::vector<AttentionMatch> attention_;  ///< fused attention subgraphs
  std::map<int, int> attention_at_;        ///< final MatMul node -> index into attention_
};

absl::StatusOr<PlannedWorkload> Planner::Build(const Region& region) const {
  PlannedWorkload planned;
  AnchorHead head;
  std::map<std::string, ir::Operand> produced;
  if (region.attention >= 0) {
    const AttentionMatch& match = attention_[region.attention];
    head = AttentionHead(match, graph_);
    produced[head.onnx_output] = head.result;
    for (int node : match.nodes) planned.node_names.push_back(graph_.nodes[node].name);
  } else if (region.anchored) {
    const Node& anchor = graph_.nodes[region.seed];
    GTCO_ASSIGN_OR_RETURN(head, LowerAnchor(anchor, graph_));
    produced[head.onnx_output] = head.result;
    planned.node_names.push_back(anchor.name);
  } else {
    head.onnx_shape = ShapeOf(OutputOf(region.seed));
    head.workload.output.shape = StripLeadingOnes(head.onnx_shape);
  }
  ir::Workload& workload = head.workload;
  for (int member : region.members) {
    const Node& node = graph_.nodes[member];
    ir::EwInstr instr{*ElementwiseEwOp(node.op_type), {}};
    for (const std::string& input : node.inputs) {
      const Tensor& tensor = graph_.tensor(input);
      ir::Operand operand;
      if (auto it = produced.find(input); it != produced.end()) {
        operand = it->second;
      } else if (tensor.is_constant && tensor.NumElements() == 1) {
        operand.kind = ir::Operand::Kind::kConst;
        operand.value = static_cast<float>(tensor.ValueAsDouble(0));
      } else {
        auto [slot, added] =
            head.input_ids.emplace(input, static_cast<int>(workload.inputs.size()));
        if (added) {
          ir::TensorDesc desc;
          desc.shape = region.anchored
                           ? *AnchorExtraShape(head, tensor.shape)
                           : StripLeadingOnes(tensor.shape);
          workload.inputs.push_back(desc);
        }
        operand.kind = ir::Operand::Kind::kInput;
        operand.index = slot->second;
      }
      instr.args.push_back(operand);
    }
    CanonicalizeOperands(instr);
    workload.epilogue.push_back(std::move(instr));
    ir::Operand value;
    value.kind = ir::Operand::Kind::kValue;
    value.index = static_cast<int>(workload.epilogue.size()) - 1;
    produced[node.outputs[0]] = value;
    planned.node_names.push_back(node.name);
  }
  absl::Status valid = workload.Validate();
  if (!valid.ok()) {
    return absl::InternalError(absl::StrCat("fusion planner built an invalid workload at node '",
                                            graph_.nodes[region.seed].name,
                                            "': ", valid.message()));
  }
  // Bindings: the anchor's own inputs (Q, K, V for a fused attention), then the extra inputs.
  planned.input_tensors.resize(workload.inputs.size());
  if (region.attention >= 0) {
    const AttentionMatch& match = attention_[region.attention];
    planned.input_tensors[0] = match.q;
    planned.input_tensors[1] = match.k;
    planned.input_tensors[2] = match.v;
    if (!match.mask.empty()) planned.input_tensors[3] = match.mask;
  } else if (region.anchored) {
    const Node& anchor = graph_.nodes[region.seed];
    for (int index = 0; index < workload.num_anchor_inputs; ++index) {
      planned.input_tensors[index] = anchor.inputs.at(index);
    }
  }
  for (const auto& [tensor, index] : head.input_ids) planned.input_tensors[index] = tensor;
  planned.output_tensor = region.members.empty() ? head.onnx_output
                                                 : graph_.nodes[region.members.back()].outputs[0];
  planned.workload = std::move(workload);
  return planned;
}

}  // namespace

absl::StatusOr<std::vector<PlannedWorkload>> PlanWorkloads(const Graph& graph,
                                                           const PlanOptions& options) {
  return Planner(graph, options).Run();
}

std::vector<PlanVariant> PlanVariantsFor(const PlanOptions& options) {
  if (options.target == target::Target::kCpu && options.fuse_attention) {
    PlanOptions unfused = options;
    unfused.fuse_attention = false;
    return {{"fused attention", options}, {"unfused attention", unfused}};
  }
  return {{"the plan", options}};
}

absl::StatusOr<ModelPlan> PlanAlternatives(const Graph& graph, const PlanOptions& options) {
  const std::vector<PlanVariant> variants = PlanVariantsFor(options);
  ModelPlan plan;
  // A workload is identified by the nodes it computes and the tensor it writes.
  std::map<std::pair<std::set<std::string>, std::string>, int> index_of;
  std::vector<std::vector<int>> of_variant(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) {
    plan.variants.push_back(variants[v].name);
    GTCO_ASSIGN_OR_RETURN(std::vector<PlannedWorkload> planned,
                          PlanWorkloads(graph, variants[v].options));
    for (PlannedWorkload& item : planned) {
      std::pair<std::set<std::string>, std::string> identity(
          std::set<std::string>(item.node_names.begin(), item.node_names.end()),
          item.output_tensor);
      auto [it, added] = index_of.emplace(std::move(identity), plan.workloads.size());
      if (added) plan.workloads.push_back(std::move(item));
      of_variant[v].push_back(it->second);
    }
  }
  const int num_workloads = static_cast<int>(plan.workloads.size());
  std::vector<size_t> planned_by(num_workloads, 0);
  for (const std::vector<int>& list : of_variant) {
    for (int w : list) ++planned_by[w];
  }
  // The workloads not every variant plans, grouped by the nodes they share (union-find).
  std::vector<int> parent(num_workloads);
  for (int w = 0; w < num_workloads; ++w) parent[w] = w;
  std::function<int(int)> root = [&](int w) {
    return parent[w] == w ? w : parent[w] = root(parent[w]);
  };
  std::map<std::string, int> owner;
  for (int w = 0; w < num_workloads; ++w) {
    if (planned_by[w] == variants.size()) {
      plan.shared.push_back(w);
      continue;
    }
    for (const std::string& node : plan.workloads[w].node_names) {
      auto [it, added] = owner.emplace(node, w);
      if (!added) parent[root(w)] = root(it->second);
    }
  }
  std::map<int, int> region_of_root;
  for (int w = 0; w < num_workloads; ++w) {
    if (planned_by[w] == variants.size()) continue;
    auto [it, added] = region_of_root.emplace(root(w), static_cast<int>(plan.regions.size()));
    if (added) plan.regions.push_back(PlanRegion{std::vector<std::vector<int>>(variants.size())});
  }
  for (size_t v = 0; v < variants.size(); ++v) {
    for (int w : of_variant[v]) {
      if (planned_by[w] == variants.size()) continue;
      plan.regions[region_of_root.at(root(w))].alternatives[v].push_back(w);
    }
  }
  // Every alternative of a region must compute the same nodes; where they do not (one variant
  // leaves a node to a data-movement step another fuses), the default plan is the only one.
  for (const PlanRegion& region : plan.regions) {
    std::set<std::string> first;
    for (size_t v = 0; v < region.alternatives.size(); ++v) {
      std::set<std::string> nodes;
      for (int w : region.alternatives[v]) {
        nodes.insert(plan.workloads[w].node_names.begin(), plan.workloads[w].node_names.end());
      }
      if (v == 0) {
        first = std::move(nodes);
      } else if (nodes != first) {
        ModelPlan only_default;
        only_default.variants = {variants[0].name};
        for (int w : of_variant[0]) only_default.workloads.push_back(plan.workloads[w]);
        for (int w = 0; w < static_cast<int>(only_default.workloads.size()); ++w) {
          only_default.shared.push_back(w);
        }
        return only_default;
      }
    }
  }
  return plan;
}

std::vector<PlannedWorkload> SelectPlan(const Graph& graph, const ModelPlan& plan,
                                        const std::vector<int>& choice) {
  std::vector<int> chosen = plan.shared;
  for (size_t r = 0; r < plan.regions.size(); ++r) {
    const int alt = r < choice.size() ? choice[r] : 0;
    const std::vector<int>& list = plan.regions[r].alternatives.at(alt);
    chosen.insert(chosen.end(), list.begin(), list.end());
  }
  std::map<std::string, int> producer;
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    for (const std::string& output : graph.nodes[index].outputs) {
      producer[output] = static_cast<int>(index);
    }
  }
  auto position = [&](int w) {
    auto it = producer.find(plan.workloads[w].output_tensor);
    return it == producer.end() ? -1 : it->second;
  };
  std::stable_sort(chosen.begin(), chosen.end(),
                   [&](int a, int b) { return position(a) < position(b); });
  std::vector<PlannedWorkload> result;
  for (int w : chosen) result.push_back(plan.workloads[w]);
  return result;
}

std::optional<double> AlternativeCost(const ModelPlan& plan, const PlanRegion& region, int alt,
                                      const WorkloadCost& cost) {
  double total = 0;
  for (int w : region.alternatives.at(alt)) {
    const std::optional<double> seconds = cost(plan.workloads[w]);
    if (!seconds) return std::nullopt;
    total += *seconds;
  }
  return total;
}

int LeastCostAlternative(const std::vector<std::optional<double>>& costs) {
  int best = 0;
  std::optional<double> least;
  for (size_t alt = 0; alt < costs.size(); ++alt) {
    if (costs[alt] && (!least || *costs[alt] < *least)) {
      best = static_cast<int>(alt);
      least = costs[alt];
    }
  }
  return best;
}

std::vector<int> ChooseByCost(const ModelPlan& plan, const WorkloadCost& cost) {
  std::vector<int> choice;
  for (const PlanRegion& region : plan.regions) {
    std::vector<std::optional<double>> costs;
    for (int alt = 0; alt < static_cast<int>(region.alternatives.size()); ++alt) {
      costs.push_back(AlternativeCost(plan, region, alt, cost));
    }
    choice.push_back(LeastCostAlternative(costs));
  }
  return choice;
}

PlanOptions PlanOptionsFor(target::Target target) {
  PlanOptions options;
  options.target = target;
  options.fuse_attention = std::getenv("GTCO_UNFUSED_ATTENTION") == nullptr;
  return options;
}

}  // namespace gtco::graph
