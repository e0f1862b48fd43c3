// NVRTC wrapper and ptxas report parsing.
#include "common/codegen/cuda/nvrtc.h"

#include <chrono>
#include <regex>
#include <vector>

#include "absl/strings/str_cat.h"

#ifdef GTCO_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace gtco::codegen {
namespace {

int64_t CaptureInt(const std::string& line, const std::regex& pattern) {
  std::smatch match;
  if (!std::regex_search(line, match, pattern)) return 0;
  return std::stoll(match[1].str());
}

#ifdef GTCO_HAVE_NVRTC
/// The one conversion of nvrtcResult.
absl::Status NvrtcStatus(nvrtcResult result, const char* what) {
  if (result == NVRTC_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", nvrtcGetErrorString(result)));
}

std::string ProgramLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);
  return log;
}
#endif

}  // namespace

CudaResourceUsage ParsePtxasReport(const std::string& log, const std::string& entry) {
  static const std::regex kRegisters(R"(Used (\d+) registers)");
  static const std::regex kStack(R"((\d+) bytes stack frame)");
  static const std::regex kSpillStores(R"((\d+) bytes spill stores)");
  static const std::regex kSpillLoads(R"((\d+) bytes spill loads)");
  static const std::regex kShared(R"((\d+) bytes smem)");
  CudaResourceUsage usage;
  // ptxas reports "Compiling entry function '<entry>' for 'sm_90'", then "Function properties for
  // <entry>" (stack and spills) and "Used N registers, ... M bytes smem" lines for it.
  bool in_entry = false;
  size_t begin = 0;
  while (begin < log.size()) {
    size_t end = log.find('\n', begin);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(begin, end - begin);
    begin = end + 1;
    if (line.find("Compiling entry function") != std::string::npos) {
      in_entry = line.find("'" + entry + "'") != std::string::npos;
    } else if (line.find("Function properties for") != std::string::npos) {
      const std::string suffix = "for " + entry;
      in_entry = line.size() >= suffix.size() &&
                 line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0;
    }
    if (!in_entry) continue;
    if (line.find("stack frame") != std::string::npos) {
      usage.stack_bytes = CaptureInt(line, kStack);
      usage.spill_store_bytes = CaptureInt(line, kSpillStores);
      usage.spill_load_bytes = CaptureInt(line, kSpillLoads);
    }
    if (line.find("Used ") != std::string::npos && line.find("registers") != std::string::npos) {
      usage.registers = static_cast<int>(CaptureInt(line, kRegisters));
      usage.static_shared_bytes = CaptureInt(line, kShared);
    }
  }
  return usage;
}

#ifdef GTCO_HAVE_NVRTC

bool NvrtcAvailable() { return true; }

std::string NvrtcVersion() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "";
  return absl::StrCat(major, ".", minor);
}

absl::StatusOr<CompiledCuda> CompileCuda(const std::string& source, const std::string& entry,
                                         const std::string& arch) {
  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram program = nullptr;
  const std::string name = entry + ".cu";
  absl::Status created = NvrtcStatus(
      nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr),
      "nvrtcCreateProgram");
  if (!created.ok()) return created;
  const std::string arch_option = "--gpu-architecture=" + arch;
  std::vector<const char*> options = {arch_option.c_str(), "-default-device", "-std=c++17",
                                      "--ptxas-options=--verbose"};
  nvrtcResult compiled =
      nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  CompiledCuda result;
  result.log = ProgramLog(program);
  absl::Status status;
  if (compiled == NVRTC_ERROR_COMPILATION) {
    status = absl::InvalidArgumentError(
        absl::StrCat("NVRTC could not compile '", entry, "' for ", arch, ":\n", result.log));
  } else {
    status = NvrtcStatus(compiled, "nvrtcCompileProgram");
  }
  if (status.ok()) {
    size_t size = 0;
    status = NvrtcStatus(nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
    if (status.ok()) {
      result.cubin.resize(size);
      status = NvrtcStatus(nvrtcGetCUBIN(program, result.cubin.data()), "nvrtcGetCUBIN");
    }
  }
  nvrtcDestroyProgram(&program);
  if (!status.ok()) return status;
  result.usage = ParsePtxasReport(result.log, entry);
  result.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

#else  // !GTCO_HAVE_NVRTC

bool NvrtcAvailable() { return false; }
std::string NvrtcVersion() { return ""; }

absl::StatusOr<CompiledCuda> CompileCuda(const std::string&, const std::string& entry,
                                         const std::string& arch) {
  return absl::UnavailableError(absl::StrCat(
      "cannot compile '", entry, "' for ", arch,
      ": this build has no NVRTC (configure with the CUDA toolkit at /usr/local/cuda)"));
}

#endif

}  // namespace gtco::codegen
