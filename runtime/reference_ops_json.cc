// JSON form of reference nodes (NodeToJson / NodeFromJson), as artifacts store fallback steps.
//
// {"op_type": "LeakyRelu", "domain": "", "name": "n", "opset": 17,
//  "attrs": {"alpha": {"kind": "float", "f": 0.1},
//            "value": {"kind": "tensor", "tensor": {"dtype": "f32", "shape": [2], "data": [1,
//            2]}}}}
// Non-finite doubles are the strings "NaN", "Infinity" and "-Infinity".
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "runtime/reference_ops.h"

namespace gtco::runtime::reference {
namespace {

using json = nlohmann::json;

json DoubleToJson(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

json DoublesToJson(const std::vector<double>& values) {
  json array = json::array();
  for (double value : values) array.push_back(DoubleToJson(value));
  return array;
}

json ValueToJson(const Value& value) {
  return {{"dtype", ElemTypeName(value.dtype)},
          {"shape", value.shape},
          {"data", DoublesToJson(value.data)}};
}

const char* KindName(Attr::Kind kind) {
  switch (kind) {
    case Attr::Kind::kInt:
      return "int";
    case Attr::Kind::kFloat:
      return "float";
    case Attr::Kind::kString:
      return "string";
    case Attr::Kind::kInts:
      return "ints";
    case Attr::Kind::kFloats:
      return "floats";
    case Attr::Kind::kTensor:
      return "tensor";
  }
  return "?";
}

absl::Status Malformed(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("reference: malformed node JSON: ", what));
}

absl::StatusOr<double> DoubleFromJson(const json& value, const std::string& where) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (text == "NaN") return std::nan("");
    if (text == "Infinity") return HUGE_VAL;
    if (text == "-Infinity") return -HUGE_VAL;
  }
  return Malformed(absl::StrCat(where, " is not a number"));
}

absl::StatusOr<std::vector<double>> DoublesFromJson(const json& array, const std::string& where) {
  if (!array.is_array()) return Malformed(absl::StrCat(where, " is not an array"));
  std::vector<double> values;
  for (const json& element : array) {
    absl::StatusOr<double> value = DoubleFromJson(element, where);
    if (!value.ok()) return value.status();
    values.push_back(*value);
  }
  return values;
}

absl::StatusOr<std::vector<int64_t>> IntsFromJson(const json& array, const std::string& where) {
  if (!array.is_array()) return Malformed(absl::StrCat(where, " is not an array"));
  std::vector<int64_t> values;
  for (const json& element : array) {
    if (!element.is_number_integer()) return Malformed(absl::StrCat(where, " holds a non-integer"));
    values.push_back(element.get<int64_t>());
  }
  return values;
}

absl::StatusOr<Value> ValueFromJson(const json& object, const std::string& where) {
  if (!object.is_object() || !object.contains("dtype") || !object["dtype"].is_string()) {
    return Malformed(absl::StrCat(where, " is not a tensor with a dtype"));
  }
  Value value;
  absl::StatusOr<ElemType> dtype = ParseElemType(object["dtype"].get<std::string>());
  if (!dtype.ok()) return Malformed(absl::StrCat(where, ": ", dtype.status().message()));
  value.dtype = *dtype;
  absl::StatusOr<std::vector<int64_t>> shape =
      IntsFromJson(object.value("shape", json::array()), where + " shape");
  if (!shape.ok()) return shape.status();
  value.shape = *shape;
  for (int64_t dim : value.shape) {
    if (dim < 0) return Malformed(absl::StrCat(where, " has a negative dim"));
  }
  absl::StatusOr<std::vector<double>> data =
      DoublesFromJson(object.value("data", json::array()), where + " data");
  if (!data.ok()) return data.status();
  value.data = *data;
  if (static_cast<int64_t>(value.data.size()) != value.NumElements()) {
    return Malformed(absl::StrCat(where, " holds ", value.data.size(), " values for its shape"));
  }
  return value;
}

absl::StatusOr<Attr> AttrFromJson(const json& object, const std::string& where) {
  if (!object.is_object() || !object.contains("kind") || !object["kind"].is_string()) {
    return Malformed(absl::StrCat(where, " has no kind"));
  }
  const std::string kind = object["kind"].get<std::string>();
  Attr attr;
  auto field = [&](const char* name) -> absl::StatusOr<json> {
    if (!object.contains(name)) return Malformed(absl::StrCat(where, " has no '", name, "'"));
    return object[name];
  };
  if (kind == "int") {
    attr.kind = Attr::Kind::kInt;
    absl::StatusOr<json> i = field("i");
    if (!i.ok()) return i.status();
    if (!i->is_number_integer()) return Malformed(absl::StrCat(where, " 'i' is not an integer"));
    attr.i = i->get<int64_t>();
  } else if (kind == "float") {
    attr.kind = Attr::Kind::kFloat;
    absl::StatusOr<json> f = field("f");
    if (!f.ok()) return f.status();
    absl::StatusOr<double> value = DoubleFromJson(*f, where);
    if (!value.ok()) return value.status();
    attr.f = *value;
  } else if (kind == "string") {
    attr.kind = Attr::Kind::kString;
    absl::StatusOr<json> s = field("s");
    if (!s.ok()) return s.status();
    if (!s->is_string()) return Malformed(absl::StrCat(where, " 's' is not a string"));
    attr.s = s->get<std::string>();
  } else if (kind == "ints") {
    attr.kind = Attr::Kind::kInts;
    absl::StatusOr<json> ints = field("ints");
    if (!ints.ok()) return ints.status();
    absl::StatusOr<std::vector<int64_t>> values = IntsFromJson(*ints, where);
    if (!values.ok()) return values.status();
    attr.ints = *values;
  } else if (kind == "floats") {
    attr.kind = Attr::Kind::kFloats;
    absl::StatusOr<json> floats = field("floats");
    if (!floats.ok()) return floats.status();
    absl::StatusOr<std::vector<double>> values = DoublesFromJson(*floats, where);
    if (!values.ok()) return values.status();
    attr.floats = *values;
  } else if (kind == "tensor") {
    attr.kind = Attr::Kind::kTensor;
    absl::StatusOr<json> tensor = field("tensor");
    if (!tensor.ok()) return tensor.status();
    absl::StatusOr<Value> value = ValueFromJson(*tensor, where);
    if (!value.ok()) return value.status();
    attr.tensor.push_back(std::move(*value));
  } else {
    return Malformed(absl::StrCat(where, " has unknown kind '", kind, "'"));
  }
  return attr;
}

}  // namespace

std::string NodeToJson(const Node& node) {
  json attrs = json::object();
  for (const auto& [name, attr] : node.attrs) {
    json entry = {{"kind", KindName(attr.kind)}};
    switch (attr.kind) {
      case Attr::Kind::kInt:
        entry["i"] = attr.i;
        break;
      case Attr::Kind::kFloat:
        entry["f"] = DoubleToJson(attr.f);
        break;
      case Attr::Kind::kString:
        entry["s"] = attr.s;
        break;
      case Attr::Kind::kInts:
        entry["ints"] = attr.ints;
        break;
      case Attr::Kind::kFloats:
        entry["floats"] = DoublesToJson(attr.floats);
        break;
      case Attr::Kind::kTensor:
        entry["tensor"] = attr.tensor.empty() ? json(nullptr) : ValueToJson(attr.tensor[0]);
        break;
    }
    attrs[name] = std::move(entry);
  }
  const json node_json = {{"op_type", node.op_type},
                          {"domain", node.domain},
                          {"name", node.name},
                          {"opset", node.opset},
                          {"attrs", std::move(attrs)}};
  // Strings are dumped as they are (attribute strings and names are UTF-8 from the model);
  // invalid UTF-8 is replaced rather than thrown on.
  return node_json.dump(-1, ' ', false, json::error_handler_t::replace);
}

absl::StatusOr<Node> NodeFromJson(std::string_view text) {
  const json object = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return Malformed("not valid JSON");
  if (!object.is_object()) return Malformed("not an object");
  Node node;
  for (const char* key : {"op_type", "domain", "name"}) {
    if (!object.contains(key)) {
      if (std::string(key) == "op_type") return Malformed("no 'op_type'");
      continue;
    }
    if (!object[key].is_string()) return Malformed(absl::StrCat("'", key, "' is not a string"));
  }
  node.op_type = object["op_type"].get<std::string>();
  node.domain = object.value("domain", "");
  node.name = object.value("name", "");
  if (object.contains("opset")) {
    if (!object["opset"].is_number_integer()) return Malformed("'opset' is not an integer");
    node.opset = object["opset"].get<int>();
  }
  if (object.contains("attrs")) {
    const json& attrs = object["attrs"];
    if (!attrs.is_object()) return Malformed("'attrs' is not an object");
    for (auto it = attrs.begin(); it != attrs.end(); ++it) {
      absl::StatusOr<Attr> attr =
          AttrFromJson(it.value(), absl::StrCat("attribute '", it.key(), "'"));
      if (!attr.ok()) return attr.status();
      node.attrs[it.key()] = std::move(*attr);
    }
  }
  return node;
}

}  // namespace gtco::runtime::reference
