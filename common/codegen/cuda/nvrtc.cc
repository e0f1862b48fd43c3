// NVRTC wrapper (libnvrtc loaded at run time with dlopen) and ptxas report parsing.
#include "common/codegen/cuda/nvrtc.h"

#include <atomic>
#include <chrono>
#include <regex>
#include <vector>

#include "absl/strings/str_cat.h"

#ifdef GTCO_HAVE_NVRTC
#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cstdlib>
#include <type_traits>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#endif

namespace gtco::codegen {
namespace {

/// Kernels compiled by this process (NvrtcCompiledCount()).
std::atomic<int64_t> compiled_kernels{0};

int64_t CaptureInt(const std::string& line, const std::regex& pattern) {
  std::smatch match;
  if (!std::regex_search(line, match, pattern)) return 0;
  return std::stoll(match[1].str());
}

#ifdef GTCO_HAVE_NVRTC
/// The NVRTC entry points GTCO calls, resolved from one loaded libnvrtc.
struct NvrtcApi {
  decltype(&nvrtcVersion) version = nullptr;
  decltype(&nvrtcGetErrorString) get_error_string = nullptr;
  decltype(&nvrtcCreateProgram) create_program = nullptr;
  decltype(&nvrtcCompileProgram) compile_program = nullptr;
  decltype(&nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&nvrtcGetProgramLogSize) get_program_log_size = nullptr;
  decltype(&nvrtcGetProgramLog) get_program_log = nullptr;
  decltype(&nvrtcGetCUBINSize) get_cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) get_cubin = nullptr;
};

/// The outcome of the one attempt to load libnvrtc in this process.
struct LoadedNvrtc {
  absl::Status status;
  std::string path;  ///< the file loaded
  NvrtcApi api;
};

/// The sonames of the NVRTC releases whose API and options GTCO uses, newest first.
constexpr const char* kSonames[] = {"libnvrtc.so.13", "libnvrtc.so.12"};

/// Where to look after the dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache): the
/// directories this build was configured with (the repository's wheel install, the toolkit CMake
/// found), the toolkit's usual place, and where pip puts the nvidia-cuda-nvrtc wheel (CUDA 13:
/// nvidia/cu13/lib; CUDA 12: nvidia/cuda_nvrtc/lib) for the system, the user and a virtualenv.
std::vector<std::string> SearchDirectories() {
  std::vector<std::string> directories = absl::StrSplit(GTCO_NVRTC_DIRS, ':', absl::SkipEmpty());
  directories.push_back("/usr/local/cuda/lib64");
  std::vector<std::string> sites = {"/usr/local/lib/python3*/dist-packages",
                                    "/usr/lib/python3/dist-packages",
                                    "/usr/local/lib/python3*/site-packages"};
  if (const char* home = std::getenv("HOME")) {
    sites.push_back(absl::StrCat(home, "/.local/lib/python3*/site-packages"));
  }
  if (const char* venv = std::getenv("VIRTUAL_ENV")) {
    sites.push_back(absl::StrCat(venv, "/lib/python3*/site-packages"));
  }
  for (const std::string& site : sites) {
    for (const char* wheel_lib : {"/nvidia/cu13/lib", "/nvidia/cuda_nvrtc/lib"}) {
      glob_t matches{};
      if (glob((site + wheel_lib).c_str(), 0, nullptr, &matches) == 0) {
        for (size_t i = 0; i < matches.gl_pathc; ++i) directories.push_back(matches.gl_pathv[i]);
      }
      globfree(&matches);
    }
  }
  return directories;
}

/// libnvrtc opens its builtins (libnvrtc-builtins.so.<major>.<minor>) by soname, which the
/// dynamic loader finds beside a toolkit in ld.so.cache but not in a wheel's folder: loading the
/// ones beside `path` first makes that lookup find them already loaded.
void PreloadBuiltinsBeside(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return;
  glob_t matches{};
  if (glob((path.substr(0, slash) + "/libnvrtc-builtins.so.*").c_str(), 0, nullptr, &matches) ==
      0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) {
      dlopen(matches.gl_pathv[i], RTLD_NOW | RTLD_LOCAL);  // kept open, like libnvrtc
    }
  }
  globfree(&matches);
}

/// Opens `name` (a path or a soname) and resolves every entry point; on failure says why.
absl::Status OpenNvrtc(const std::string& name, LoadedNvrtc& loaded) {
  PreloadBuiltinsBeside(name);
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return absl::NotFoundError(dlerror());
  const auto resolve = [&](auto& entry, const char* symbol) {
    entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(dlsym(handle, symbol));
    return entry != nullptr;
  };
  NvrtcApi& api = loaded.api;
  if (!resolve(api.version, "nvrtcVersion") ||
      !resolve(api.get_error_string, "nvrtcGetErrorString") ||
      !resolve(api.create_program, "nvrtcCreateProgram") ||
      !resolve(api.compile_program, "nvrtcCompileProgram") ||
      !resolve(api.destroy_program, "nvrtcDestroyProgram") ||
      !resolve(api.get_program_log_size, "nvrtcGetProgramLogSize") ||
      !resolve(api.get_program_log, "nvrtcGetProgramLog") ||
      !resolve(api.get_cubin_size, "nvrtcGetCUBINSize") ||
      !resolve(api.get_cubin, "nvrtcGetCUBIN")) {
    dlclose(handle);
    return absl::NotFoundError(absl::StrCat(name, " lacks an NVRTC entry point GTCO needs"));
  }
  link_map* map = nullptr;
  loaded.path = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr ? map->l_name : name;
  return absl::OkStatus();  // kept open for the life of the process
}

LoadedNvrtc LoadNvrtc() {
  LoadedNvrtc loaded;
  const char* chosen = std::getenv("GTCO_NVRTC_LIBRARY");
  if (chosen != nullptr && *chosen != '\0') {
    absl::Status opened = OpenNvrtc(chosen, loaded);
    if (!opened.ok()) {
      loaded.status = absl::UnavailableError(absl::StrCat(
          "GTCO_NVRTC_LIBRARY=", chosen, " cannot be used as NVRTC: ", opened.message()));
    }
    return loaded;
  }
  std::vector<std::string> looked;
  for (const char* soname : kSonames) {
    absl::Status opened = OpenNvrtc(soname, loaded);
    if (opened.ok()) return loaded;
    looked.push_back(std::string(opened.message()));
  }
  for (const std::string& directory : SearchDirectories()) {
    bool present = false;
    for (const char* soname : kSonames) {
      const std::string path = absl::StrCat(directory, "/", soname);
      if (access(path.c_str(), F_OK) != 0) continue;
      present = true;
      absl::Status opened = OpenNvrtc(path, loaded);
      if (opened.ok()) return loaded;
      looked.push_back(std::string(opened.message()));
    }
    if (!present) looked.push_back(absl::StrCat(directory, " (no libnvrtc)"));
  }
  loaded.status = absl::UnavailableError(absl::StrCat(
      "NVRTC (libnvrtc.so.13 or libnvrtc.so.12) cannot be loaded; looked at: ",
      absl::StrJoin(looked, "; "),
      ". Install it with scripts/setup.sh (puts the nvidia-cuda-nvrtc wheel in .deps/cuda), "
      "`python3 -m pip install nvidia-cuda-nvrtc`, or the CUDA toolkit, or set "
      "GTCO_NVRTC_LIBRARY to the path of libnvrtc.so"));
  return loaded;
}

/// The process's NVRTC, loaded on first use.
const LoadedNvrtc& Nvrtc() {
  static const LoadedNvrtc* const loaded = new LoadedNvrtc(LoadNvrtc());
  return *loaded;
}

/// The one conversion of nvrtcResult.
absl::Status NvrtcStatus(nvrtcResult result, const char* what) {
  if (result == NVRTC_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", Nvrtc().api.get_error_string(result)));
}

std::string ProgramLog(nvrtcProgram program) {
  const NvrtcApi& api = Nvrtc().api;
  size_t size = 0;
  if (api.get_program_log_size(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (api.get_program_log(program, log.data()) != NVRTC_SUCCESS) return "";
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

bool NvrtcBuilt() { return true; }

absl::Status NvrtcLoadStatus() { return Nvrtc().status; }

bool NvrtcAvailable() { return Nvrtc().status.ok(); }

std::string NvrtcLibraryPath() { return Nvrtc().path; }

std::string NvrtcVersion() {
  if (!NvrtcAvailable()) return "";
  int major = 0, minor = 0;
  if (Nvrtc().api.version(&major, &minor) != NVRTC_SUCCESS) return "";
  return absl::StrCat(major, ".", minor);
}

int64_t NvrtcCompiledCount() { return compiled_kernels.load(std::memory_order_relaxed); }

absl::StatusOr<CompiledCuda> CompileCuda(const std::string& source, const std::string& entry,
                                         const std::string& arch) {
  if (!NvrtcAvailable()) return NvrtcLoadStatus();
  const NvrtcApi& api = Nvrtc().api;
  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram program = nullptr;
  const std::string name = entry + ".cu";
  absl::Status created = NvrtcStatus(
      api.create_program(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr),
      "nvrtcCreateProgram");
  if (!created.ok()) return created;
  const std::string arch_option = "--gpu-architecture=" + arch;
  std::vector<const char*> options = {arch_option.c_str(), "-default-device", "-std=c++17",
                                      "--ptxas-options=--verbose"};
  nvrtcResult compiled =
      api.compile_program(program, static_cast<int>(options.size()), options.data());
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
    status = NvrtcStatus(api.get_cubin_size(program, &size), "nvrtcGetCUBINSize");
    if (status.ok()) {
      result.cubin.resize(size);
      status = NvrtcStatus(api.get_cubin(program, result.cubin.data()), "nvrtcGetCUBIN");
    }
  }
  api.destroy_program(&program);
  if (!status.ok()) return status;
  result.usage = ParsePtxasReport(result.log, entry);
  result.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  compiled_kernels.fetch_add(1, std::memory_order_relaxed);
  return result;
}

#else  // !GTCO_HAVE_NVRTC

bool NvrtcBuilt() { return false; }

absl::Status NvrtcLoadStatus() {
  return absl::UnavailableError(
      "this build has no NVRTC: it was configured with -DGTCO_WITH_CUDA=OFF");
}

bool NvrtcAvailable() { return false; }
std::string NvrtcLibraryPath() { return ""; }
std::string NvrtcVersion() { return ""; }
int64_t NvrtcCompiledCount() { return 0; }

absl::StatusOr<CompiledCuda> CompileCuda(const std::string&, const std::string& entry,
                                         const std::string& arch) {
  return absl::UnavailableError(absl::StrCat("cannot compile '", entry, "' for ", arch, ": ",
                                             NvrtcLoadStatus().message()));
}

#endif

}  // namespace gtco::codegen
