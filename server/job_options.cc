// The jobs table's options column, written and read through protobuf's JSON support for
// google.protobuf.Struct (a JSON library the server already links; no RPC type involved).
#include "server/job_options.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::server {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

/// An integer written as a JSON number or a decimal string (protobuf's int64 mapping).
bool IntegerOf(const Value& value, int64_t* out) {
  if (value.kind_case() == Value::kNumberValue) {
    const double number = value.number_value();
    // Integral and inside int64 (2^63 is exactly representable; casting beyond is undefined).
    if (!std::isfinite(number) || number != std::floor(number) || number >= 0x1p63 ||
        number < -0x1p63) {
      return false;
    }
    *out = static_cast<int64_t>(number);
    return true;
  }
  if (value.kind_case() == Value::kStringValue) return absl::SimpleAtoi(value.string_value(), out);
  return false;
}

/// The field named `json_name`, or else `proto_name` (JSON readers accept both spellings).
const Value* Field(const Struct& object, const char* json_name, const char* proto_name = nullptr) {
  auto found = object.fields().find(json_name);
  if (found == object.fields().end() && proto_name != nullptr) {
    found = object.fields().find(proto_name);
  }
  return found == object.fields().end() ? nullptr : &found->second;
}

absl::Status BadPlan() { return absl::InvalidArgumentError("job options: plan is malformed"); }

/// A string field of `object`, or nullptr.
const std::string* StringField(const Struct& object, const char* name) {
  const Value* value = Field(object, name);
  return value != nullptr && value->kind_case() == Value::kStringValue ? &value->string_value()
                                                                       : nullptr;
}

/// The items of a list field of `object`, or nullptr.
const google::protobuf::RepeatedPtrField<Value>* ListField(const Struct& object, const char* name) {
  const Value* value = Field(object, name);
  return value != nullptr && value->kind_case() == Value::kListValue ? &value->list_value().values()
                                                                     : nullptr;
}

/// A positive integer field of `object` (at most 2^30), or 0.
int CountField(const Struct& object, const char* name) {
  const Value* value = Field(object, name);
  int64_t number = 0;
  if (value == nullptr || !IntegerOf(*value, &number) || number < 1 || number > (1 << 30)) {
    return 0;
  }
  return static_cast<int>(number);
}

absl::StatusOr<std::vector<onnx::PlanChoice>> DecodePlan(const Value& value) {
  if (value.kind_case() != Value::kListValue) return BadPlan();
  std::vector<onnx::PlanChoice> plan;
  for (const Value& item : value.list_value().values()) {
    if (item.kind_case() != Value::kStructValue) return BadPlan();
    const Struct& entry = item.struct_value();
    const std::string* description = StringField(entry, "description");
    const auto* alternatives = ListField(entry, "alternatives");
    onnx::PlanChoice choice;
    choice.instances = CountField(entry, "instances");
    if (description == nullptr || alternatives == nullptr || choice.instances == 0) {
      return BadPlan();
    }
    choice.description = *description;
    for (const Value& alt : *alternatives) {
      if (alt.kind_case() != Value::kStructValue) return BadPlan();
      const std::string* name = StringField(alt.struct_value(), "name");
      const auto* workloads = ListField(alt.struct_value(), "workloads");
      if (name == nullptr || workloads == nullptr) return BadPlan();
      onnx::PlanChoice::Alternative alternative{*name, {}};
      for (const Value& workload : *workloads) {
        if (workload.kind_case() != Value::kStructValue) return BadPlan();
        const std::string* key = StringField(workload.struct_value(), "key");
        const int count = CountField(workload.struct_value(), "count");
        if (key == nullptr || count == 0) return BadPlan();
        alternative.workloads.emplace_back(*key, count);
      }
      choice.alternatives.push_back(std::move(alternative));
    }
    if (choice.alternatives.empty()) return BadPlan();
    plan.push_back(std::move(choice));
  }
  return plan;
}

}  // namespace

std::string EncodeJobOptions(const JobOptions& options) {
  Struct object;
  auto& fields = *object.mutable_fields();
  if (options.round_size != 0) fields["roundSize"].set_number_value(options.round_size);
  if (!options.scheduler.empty()) fields["scheduler"].set_string_value(options.scheduler);
  if (!options.shapes.empty()) {
    ListValue& shapes = *fields["shapes"].mutable_list_value();
    for (const auto& [input, dims] : options.shapes) {
      Struct& shape = *shapes.add_values()->mutable_struct_value();
      (*shape.mutable_fields())["input"].set_string_value(input);
      ListValue& dim_list = *(*shape.mutable_fields())["dims"].mutable_list_value();
      for (int64_t dim : dims) dim_list.add_values()->set_string_value(absl::StrCat(dim));
    }
  }
  if (!options.plan.empty()) {
    ListValue& plan = *fields["plan"].mutable_list_value();
    for (const onnx::PlanChoice& choice : options.plan) {
      Struct& entry = *plan.add_values()->mutable_struct_value();
      auto& entry_fields = *entry.mutable_fields();
      entry_fields["description"].set_string_value(choice.description);
      entry_fields["instances"].set_number_value(choice.instances);
      ListValue& alternatives = *entry_fields["alternatives"].mutable_list_value();
      for (const onnx::PlanChoice::Alternative& alternative : choice.alternatives) {
        Struct& alt = *alternatives.add_values()->mutable_struct_value();
        (*alt.mutable_fields())["name"].set_string_value(alternative.name);
        ListValue& workloads = *(*alt.mutable_fields())["workloads"].mutable_list_value();
        for (const auto& [key, count] : alternative.workloads) {
          Struct& workload = *workloads.add_values()->mutable_struct_value();
          (*workload.mutable_fields())["key"].set_string_value(key);
          (*workload.mutable_fields())["count"].set_number_value(count);
        }
      }
    }
  }
  if (!options.graph_check.empty()) fields["graphCheck"].set_string_value(options.graph_check);
  if (!options.fallbacks.empty()) {
    ListValue& fallbacks = *fields["fallbacks"].mutable_list_value();
    for (const graph::FallbackNode& node : options.fallbacks) {
      auto& entry = *fallbacks.add_values()->mutable_struct_value()->mutable_fields();
      entry["opType"].set_string_value(node.op_type);
      entry["node"].set_string_value(node.node);
      entry["reason"].set_string_value(node.reason);
    }
  }
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(object, &json);
  return json;
}

absl::StatusOr<JobOptions> DecodeJobOptions(const std::string& json) {
  Struct object;
  if (!google::protobuf::util::JsonStringToMessage(json, &object).ok()) {
    return absl::InvalidArgumentError("job options are not a JSON object");
  }
  JobOptions options;
  if (const Value* round_size = Field(object, "roundSize", "round_size")) {
    int64_t value = 0;
    if (!IntegerOf(*round_size, &value)) {
      return absl::InvalidArgumentError("job options: roundSize is not an integer");
    }
    // Out-of-range sizes read as 0, which the server replaces with its default (as it always
    // did with a non-positive one), keeping the other options.
    options.round_size = value > 0 && value <= (1 << 20) ? static_cast<int>(value) : 0;
  }
  if (const Value* scheduler = Field(object, "scheduler")) {
    if (scheduler->kind_case() != Value::kStringValue) {
      return absl::InvalidArgumentError("job options: scheduler is not a string");
    }
    options.scheduler = scheduler->string_value();
  }
  if (const Value* shapes = Field(object, "shapes")) {
    if (shapes->kind_case() != Value::kListValue) {
      return absl::InvalidArgumentError("job options: shapes is not a list");
    }
    for (const Value& shape : shapes->list_value().values()) {
      const Value* input =
          shape.kind_case() == Value::kStructValue ? Field(shape.struct_value(), "input") : nullptr;
      const Value* dims =
          shape.kind_case() == Value::kStructValue ? Field(shape.struct_value(), "dims") : nullptr;
      if (input == nullptr || input->kind_case() != Value::kStringValue) {
        return absl::InvalidArgumentError("job options: a shape names no input");
      }
      std::vector<int64_t>& out = options.shapes[input->string_value()];
      if (dims == nullptr) continue;
      if (dims->kind_case() != Value::kListValue) {
        return absl::InvalidArgumentError("job options: a shape's dims are not a list");
      }
      for (const Value& dim : dims->list_value().values()) {
        int64_t value = 0;
        if (!IntegerOf(dim, &value)) {
          return absl::InvalidArgumentError("job options: a shape's dim is not an integer");
        }
        out.push_back(value);
      }
    }
  }
  if (const Value* plan = Field(object, "plan")) {
    GTCO_ASSIGN_OR_RETURN(options.plan, DecodePlan(*plan));
  }
  if (const Value* graph_check = Field(object, "graphCheck")) {
    if (graph_check->kind_case() != Value::kStringValue) {
      return absl::InvalidArgumentError("job options: graphCheck is not a string");
    }
    options.graph_check = graph_check->string_value();
  }
  if (const Value* fallbacks = Field(object, "fallbacks")) {
    if (fallbacks->kind_case() != Value::kListValue) {
      return absl::InvalidArgumentError("job options: fallbacks is not a list");
    }
    for (const Value& entry : fallbacks->list_value().values()) {
      if (entry.kind_case() != Value::kStructValue) {
        return absl::InvalidArgumentError("job options: a fallback is not an object");
      }
      graph::FallbackNode node;
      for (auto [key, out] : {std::pair<const char*, std::string*>{"opType", &node.op_type},
                              {"node", &node.node},
                              {"reason", &node.reason}}) {
        const Value* field = Field(entry.struct_value(), key);
        if (field == nullptr || field->kind_case() != Value::kStringValue) {
          return absl::InvalidArgumentError(
              absl::StrCat("job options: a fallback's ", key, " is not a string"));
        }
        *out = field->string_value();
      }
      options.fallbacks.push_back(std::move(node));
    }
  }
  return options;
}

}  // namespace gtco::server
