// Ahead-of-time compilation: link, add the parallel-for hook, optimize, emit, link a .so.
#include "common/codegen/llvm/aot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/codegen/llvm/optimize.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

namespace gtco::codegen {
namespace {

struct Level {
  const char* cpu;
  std::vector<std::string> features;  ///< cpuinfo spellings a host needs (cumulative)
};

/// The x86-64 micro-architecture levels (psABI), with the cpuinfo flags of their features.
const std::vector<Level>& Levels() {
  static const auto* levels = new std::vector<Level>{
      {"x86-64-v2", {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}},
      {"x86-64-v3",
       {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3", "avx", "avx2", "bmi1", "bmi2",
        "f16c", "fma", "abm", "movbe", "xsave"}},
      {"x86-64-v4",
       {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3", "avx", "avx2", "bmi1", "bmi2",
        "f16c", "fma", "abm", "movbe", "xsave", "avx512f", "avx512bw", "avx512cd", "avx512dq",
        "avx512vl"}}};
  return *levels;
}

/// Runs `argv` (posix_spawn: no code runs between fork and exec in this multi-threaded
/// process) with its output in `log`, and waits. Its exit status, or -1 when it cannot start.
int RunCommand(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0) return started == ENOENT ? 127 : -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

/// Defines `gtco_parallel_for` (hidden) in `module` as a call through the exported pointer
/// `gtco_rt_parallel_for`.
void AddParallelHook(llvm::Module& module) {
  llvm::LLVMContext& context = module.getContext();
  llvm::Type* i64 = llvm::Type::getInt64Ty(context);
  llvm::PointerType* ptr = llvm::PointerType::getUnqual(context);
  llvm::FunctionType* type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), {i64, ptr, ptr}, false);
  auto* hook = new llvm::GlobalVariable(module, ptr, false, llvm::GlobalValue::ExternalLinkage,
                                        llvm::ConstantPointerNull::get(ptr),
                                        "gtco_rt_parallel_for");
  hook->setVisibility(llvm::GlobalValue::DefaultVisibility);
  llvm::Function* function = module.getFunction("gtco_parallel_for");
  if (function == nullptr) {
    function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, "gtco_parallel_for",
                                      module);
  }
  function->setLinkage(llvm::GlobalValue::InternalLinkage);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", function));
  llvm::Value* target = builder.CreateLoad(ptr, hook);
  std::vector<llvm::Value*> args;
  for (llvm::Argument& arg : function->args()) args.push_back(&arg);
  builder.CreateCall(type, target, args);
  builder.CreateRetVoid();
}

}  // namespace

std::string HostTuneCpu() {
  const std::string name = llvm::sys::getHostCPUName().str();
  return name.empty() ? "generic" : name;
}

absl::StatusOr<AotTarget> AotTargetFor(const std::vector<std::string>& host_features,
                                       const std::string& cap) {
  int cap_level = static_cast<int>(Levels().size()) - 1;
  if (!cap.empty()) {
    const std::string name = cap == "avx2" ? "x86-64-v3" : cap == "avx512" ? "x86-64-v4" : cap;
    cap_level = -1;
    for (size_t level = 0; level < Levels().size(); ++level) {
      if (name == Levels()[level].cpu) cap_level = static_cast<int>(level);
    }
    if (cap_level < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown instruction set '", cap, "'; expected x86-64-v2, x86-64-v3 (avx2) or "
          "x86-64-v4 (avx512)"));
    }
  }
  std::vector<std::string> have = host_features;
  std::sort(have.begin(), have.end());
  AotTarget target{"x86-64", {}, {}, {}};
  for (int level = 0; level <= cap_level; ++level) {
    const Level& candidate = Levels()[level];
    const bool fits = std::all_of(candidate.features.begin(), candidate.features.end(),
                                  [&](const std::string& feature) {
                                    return std::binary_search(have.begin(), have.end(), feature);
                                  });
    if (!fits) break;
    target.cpu = candidate.cpu;
    target.features = candidate.features;
  }
  std::sort(target.features.begin(), target.features.end());
  return target;
}

absl::StatusOr<std::vector<std::string>> LevelFeatures(const std::string& isa) {
  std::vector<std::string> everything = Levels().back().features;
  absl::StatusOr<AotTarget> target = AotTargetFor(everything, isa);
  if (!target.ok()) return target.status();
  return target->features;
}

absl::StatusOr<std::string> CompileSharedObject(const std::vector<std::string>& modules,
                                                const AotTarget& target) {
  InitializeLlvmOnce();
  llvm::LLVMContext context;
  auto composite = std::make_unique<llvm::Module>("gtco_artifact", context);
  for (size_t index = 0; index < modules.size(); ++index) {
    llvm::SMDiagnostic error;
    std::unique_ptr<llvm::Module> module = llvm::parseIR(
        llvm::MemoryBufferRef(modules[index], absl::StrCat("kernel", index)), error, context);
    if (module == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("kernel module ", index,
                                                     " does not parse: ", error.getMessage().str()));
    }
    if (llvm::Linker::linkModules(*composite, std::move(module))) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel module ", index, " clashes with an earlier one"));
    }
  }
  AddParallelHook(*composite);
  const std::string triple = "x86_64-pc-linux-gnu";
  std::string lookup_error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(triple, lookup_error);
  if (llvm_target == nullptr) return absl::InternalError(lookup_error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(llvm_target->createTargetMachine(
      triple, target.cpu, absl::StrJoin(target.extra_llvm_features, ","), options,
      llvm::Reloc::PIC_, llvm::None, llvm::CodeGenOpt::Aggressive));
  if (machine == nullptr) {
    return absl::InternalError(absl::StrCat("no target machine for ", target.cpu));
  }
  composite->setTargetTriple(triple);
  composite->setDataLayout(machine->createDataLayout());
  for (llvm::Function& function : *composite) {
    if (function.isDeclaration()) continue;
    function.addFnAttr("target-cpu", target.cpu);
    if (!target.tune_cpu.empty() && target.tune_cpu != "generic") {
      function.addFnAttr("tune-cpu", target.tune_cpu);
    }
    if (!target.extra_llvm_features.empty()) {
      function.addFnAttr("target-features", absl::StrJoin(target.extra_llvm_features, ","));
    }
  }
  std::string verify_errors;
  llvm::raw_string_ostream verify_stream(verify_errors);
  if (llvm::verifyModule(*composite, &verify_stream)) {
    return absl::InternalError(absl::StrCat("linked kernels fail verification: ", verify_errors));
  }
  OptimizeModule(*composite, *machine);
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream object_stream(object);
  llvm::legacy::PassManager emit;
  if (machine->addPassesToEmitFile(emit, object_stream, nullptr, llvm::CGFT_ObjectFile)) {
    return absl::InternalError("LLVM cannot emit an object file for this target");
  }
  emit.run(*composite);
  // Link with the system's driver: libm and libc resolve at load time.
  char dir_template[] = "/tmp/gtco-aot-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return absl::InternalError("cannot create a temporary directory");
  const std::string object_path = absl::StrCat(dir, "/kernels.o");
  const std::string library_path = absl::StrCat(dir, "/kernels.so");
  const std::string log_path = absl::StrCat(dir, "/link.log");
  {
    std::ofstream file(object_path, std::ios::binary);
    file.write(object.data(), static_cast<std::streamsize>(object.size()));
  }
  const int status = RunCommand(
      {"cc", "-shared", "-nostartfiles", "-o", library_path, object_path, "-lm"}, log_path);
  std::string library;
  if (status == 0) library = ReadFile(library_path);
  const std::string log = ReadFile(log_path);
  for (const std::string& path : {object_path, library_path, log_path}) std::remove(path.c_str());
  rmdir(dir);
  if (status == 127 || status < 0) {
    return absl::FailedPreconditionError(
        "exporting needs a C compiler driver ('cc', Debian: build-essential) to link the shared "
        "object");
  }
  if (status != 0 || library.empty()) {
    return absl::InternalError(absl::StrCat("linking the kernels failed: ", log));
  }
  return library;
}

}  // namespace gtco::codegen
