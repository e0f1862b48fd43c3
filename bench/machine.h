// The CPU's family, model and stepping from /proc/cpuinfo, for the machine line of a results
// file: a model name such as "AMD EPYC" is shared by three generations (Zen 3, 4 and 5), and
// "Intel Xeon" VMs may be Sapphire or Emerald Rapids. bench/machine.py writes the same for the
// Python benchmarks.
#pragma once

#include <fstream>
#include <string>

namespace gtco::bench {

/// "family 25, model 17, stepping 1" (fields the kernel does not report are left out).
inline std::string CpuFamilyModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, family, model, stepping;
  while (std::getline(cpuinfo, line) && (family.empty() || model.empty() || stepping.empty())) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    const std::string value = start == std::string::npos ? "" : line.substr(start);
    if (key == "cpu family" && family.empty()) family = value;
    if (key == "model" && model.empty()) model = value;
    if (key == "stepping" && stepping.empty()) stepping = value;
  }
  std::string text;
  for (const auto& [name, value] : {std::pair<const char*, std::string>{"family", family},
                                    {"model", model},
                                    {"stepping", stepping}}) {
    if (value.empty()) continue;
    if (!text.empty()) text += ", ";
    text += std::string(name) + " " + value;
  }
  return text.empty() ? "family/model not reported" : text;
}

}  // namespace gtco::bench
