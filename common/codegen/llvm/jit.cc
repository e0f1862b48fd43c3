// CpuJit: ORC LLJIT for the host CPU with an O3 IR transform layer, one JITDylib per module,
// process and libm symbols, and the parallel runtime registered as an absolute symbol.
#include "common/codegen/llvm/jit.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/codegen/llvm/optimize.h"
#include "common/codegen/llvm/runtime.h"
#include "common/target/target.h"
#include "common/util/status.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace gtco::codegen {
namespace {

/// The one place llvm::Error becomes absl::Status.
absl::Status ToStatus(llvm::Error error, absl::StatusCode code, const std::string& context) {
  if (!error) return absl::OkStatus();
  return absl::Status(code, absl::StrCat(context, ": ", llvm::toString(std::move(error))));
}

template <typename Fn>
llvm::orc::SymbolMap::value_type Absolute(llvm::orc::LLJIT& jit, const char* name, Fn* address) {
  return {
      jit.mangleAndIntern(name),
      llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(address),
                               llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable)};
}

absl::Status RegisterRuntimeSymbols(llvm::orc::LLJIT& jit) {
  llvm::orc::JITDylib& main = jit.getMainJITDylib();
  llvm::orc::SymbolMap symbols;
  symbols.insert(Absolute(jit, "gtco_parallel_for", &gtco_parallel_for));
  using UnaryMath = float(float);
  symbols.insert(Absolute(jit, "expf", static_cast<UnaryMath*>(&::expf)));
  symbols.insert(Absolute(jit, "erff", static_cast<UnaryMath*>(&::erff)));
  symbols.insert(Absolute(jit, "tanhf", static_cast<UnaryMath*>(&::tanhf)));
  symbols.insert(Absolute(jit, "sqrtf", static_cast<UnaryMath*>(&::sqrtf)));
  symbols.insert(Absolute(jit, "floorf", static_cast<UnaryMath*>(&::floorf)));
  symbols.insert(Absolute(jit, "powf", static_cast<float (*)(float, float)>(&::powf)));
  symbols.insert(Absolute(jit, "memset", &::memset));
  symbols.insert(Absolute(jit, "memcpy", &::memcpy));
  symbols.insert(Absolute(jit, "memmove", &::memmove));
  GTCO_RETURN_IF_ERROR(ToStatus(main.define(llvm::orc::absoluteSymbols(std::move(symbols))),
                                absl::StatusCode::kInternal, "registering runtime symbols"));
  auto process_symbols = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit.getDataLayout().getGlobalPrefix());
  if (!process_symbols) {
    return ToStatus(process_symbols.takeError(), absl::StatusCode::kInternal,
                    "searching process symbols");
  }
  main.addGenerator(std::move(*process_symbols));
  return absl::OkStatus();
}

/// CPU features (LLVM spellings) a call of x86 intrinsic `name` needs; empty for others.
std::vector<std::string> RequiredFeatures(const std::string& name) {
  std::vector<std::string> features;
  const bool narrow =
      name.find(".128") != std::string::npos || name.find(".256") != std::string::npos;
  if (name == "llvm.x86.tdpbf16ps") return {"amx-tile", "amx-bf16"};
  if (name.rfind("llvm.x86.tdpb", 0) == 0) return {"amx-tile", "amx-int8"};
  if (name.rfind("llvm.x86.tile", 0) == 0 || name == "llvm.x86.ldtilecfg") return {"amx-tile"};
  if (name.rfind("llvm.x86.avx512bf16.", 0) == 0) {
    features.push_back("avx512bf16");
  } else if (name.rfind("llvm.x86.avx512.vpdpbusd", 0) == 0 ||
             name.rfind("llvm.x86.avx512.vpdpwssd", 0) == 0) {
    features.push_back("avx512vnni");
  } else if (name.rfind("llvm.x86.avx512.", 0) == 0) {
    features.push_back("avx512f");
  } else {
    return features;
  }
  if (narrow) features.push_back("avx512vl");
  return features;
}

/// FAILED_PRECONDITION when `module` calls an x86 intrinsic the host cannot execute (LLVM
/// would abort the process in instruction selection instead of returning an error).
absl::Status CheckIntrinsicFeatures(const llvm::Module& module,
                                    const std::vector<std::string>& host_features) {
  for (const llvm::Function& function : module) {
    if (!function.isDeclaration() || !function.isIntrinsic()) continue;
    const std::string name = function.getName().str();
    for (const std::string& feature : RequiredFeatures(name)) {
      if (!std::binary_search(host_features.begin(), host_features.end(), feature)) {
        return absl::FailedPreconditionError(absl::StrCat("the program calls ", name,
                                                          ", which needs the CPU feature '",
                                                          feature, "' that this host lacks"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

struct CpuJit::State {
  std::mutex mutex;
  std::unique_ptr<llvm::TargetMachine> target_machine;  ///< for the optimizer and EmitAssembly
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::string host_cpu;
  std::vector<std::string> host_features;
  std::string feature_string;  ///< "+avx2,+fma,..." for target-features attributes
  std::vector<llvm::orc::JITDylib*> dylibs;
  uint64_t next_dylib = 0;

  /// Parses and verifies `text` into a module ready for the host (data layout, triple, CPU).
  absl::StatusOr<std::unique_ptr<llvm::Module>> Parse(const std::string& text,
                                                      llvm::LLVMContext& context) {
    llvm::SMDiagnostic diagnostic;
    // parseIR reads bitcode (by its magic number) or text.
    std::unique_ptr<llvm::Module> module =
        llvm::parseIR(llvm::MemoryBufferRef(text, "candidate"), diagnostic, context);
    if (module == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot parse LLVM IR at line ", diagnostic.getLineNo(), ", column ",
                       diagnostic.getColumnNo() + 1, ": ", diagnostic.getMessage().str(), "\n",
                       diagnostic.getLineContents().str()));
    }
    std::string verifier_message;
    llvm::raw_string_ostream verifier_stream(verifier_message);
    if (llvm::verifyModule(*module, &verifier_stream)) {
      verifier_stream.flush();
      return absl::InvalidArgumentError(absl::StrCat("invalid LLVM IR: ", verifier_message));
    }
    GTCO_RETURN_IF_ERROR(CheckIntrinsicFeatures(*module, host_features));
    module->setDataLayout(jit->getDataLayout());
    module->setTargetTriple(jit->getTargetTriple().str());
    for (llvm::Function& function : *module) {
      if (function.isDeclaration()) continue;
      function.addFnAttr("target-cpu", host_cpu);
      function.addFnAttr("target-features", feature_string);
    }
    return module;
  }
};

CpuJit::CpuJit(std::unique_ptr<State> state) : state_(std::move(state)) {}
CpuJit::~CpuJit() = default;

absl::StatusOr<std::unique_ptr<CpuJit>> CpuJit::Create() {
  InitializeLlvmOnce();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    return ToStatus(builder.takeError(), absl::StatusCode::kInternal, "detecting the host");
  }
  builder->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  GTCO_ASSIGN_OR_RETURN(const std::string isa_cap, target::CpuIsaCap());
  // Features explicitly off, so LLVM emits no such code at all (and a program calling such an
  // intrinsic is refused by CheckIntrinsicFeatures): under GTCO_CPU_ISA=avx2 everything beyond
  // AVX2 + FMA; AMX where Linux refuses this process the tile state (asked once here).
  const bool amx_usable = runtime::AmxTileStateUsable();
  std::vector<std::string> capped;
  for (const std::string& feature : builder->getFeatures().getFeatures()) {
    const std::string name = feature.size() > 1 ? feature.substr(1) : "";
    const bool off = (isa_cap == "avx2" && target::BeyondAvx2(name)) ||
                     (!amx_usable && name.rfind("amx", 0) == 0);
    capped.push_back(off && feature[0] == '+' ? "-" + name : feature);
  }
  builder->getFeatures() = llvm::SubtargetFeatures();
  builder->addFeatures(capped);
  auto state = std::make_unique<State>();
  state->host_cpu = builder->getCPU();
  for (const std::string& feature : builder->getFeatures().getFeatures()) {
    if (!feature.empty() && feature[0] == '+') state->host_features.push_back(feature.substr(1));
  }
  std::sort(state->host_features.begin(), state->host_features.end());
  state->feature_string = builder->getFeatures().getString();
  auto target_machine = builder->createTargetMachine();
  if (!target_machine) {
    return ToStatus(target_machine.takeError(), absl::StatusCode::kInternal,
                    "creating the target machine");
  }
  state->target_machine = std::move(*target_machine);
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*builder)).create();
  if (!jit) return ToStatus(jit.takeError(), absl::StatusCode::kInternal, "creating the JIT");
  state->jit = std::move(*jit);
  GTCO_RETURN_IF_ERROR(RegisterRuntimeSymbols(*state->jit));
  llvm::TargetMachine* optimizer_target = state->target_machine.get();
  state->jit->getIRTransformLayer().setTransform(
      [optimizer_target](llvm::orc::ThreadSafeModule module,
                         const llvm::orc::MaterializationResponsibility&)
          -> llvm::Expected<llvm::orc::ThreadSafeModule> {
        module.withModuleDo([&](llvm::Module& m) { OptimizeModule(m, *optimizer_target); });
        return module;
      });
  return std::unique_ptr<CpuJit>(new CpuJit(std::move(state)));
}

absl::StatusOr<KernelEntry> CpuJit::Compile(const std::string& llvm_ir_text,
                                            const std::string& entry_name) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto context = std::make_unique<llvm::LLVMContext>();
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module,
                        state_->Parse(llvm_ir_text, *context));
  const llvm::Function* entry = module->getFunction(entry_name);
  if (entry == nullptr || entry->isDeclaration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the module defines no function '", entry_name, "'"));
  }
  llvm::orc::LLJIT& jit = *state_->jit;
  auto dylib = jit.createJITDylib(absl::StrCat("gtco_module_", state_->next_dylib++));
  if (!dylib) {
    return ToStatus(dylib.takeError(), absl::StatusCode::kInternal, "creating a JITDylib");
  }
  llvm::orc::JITDylib& library = *dylib;
  library.addToLinkOrder(jit.getMainJITDylib());
  absl::Status status = ToStatus(
      jit.addIRModule(library, llvm::orc::ThreadSafeModule(std::move(module), std::move(context))),
      absl::StatusCode::kInternal, "adding the module");
  llvm::Expected<llvm::orc::ExecutorAddr> address =
      status.ok() ? jit.lookup(library, entry_name)
                  : llvm::Expected<llvm::orc::ExecutorAddr>(llvm::orc::ExecutorAddr());
  if (status.ok() && !address) {
    status = ToStatus(address.takeError(), absl::StatusCode::kInvalidArgument,
                      absl::StrCat("compiling '", entry_name, "'"));
  }
  if (!status.ok()) {
    llvm::consumeError(jit.getExecutionSession().removeJITDylib(library));
    return status;
  }
  state_->dylibs.push_back(&library);
  return address->toPtr<KernelEntry>();
}

absl::Status CpuJit::Reset() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  absl::Status status;
  for (llvm::orc::JITDylib* library : state_->dylibs) {
    status.Update(ToStatus(state_->jit->getExecutionSession().removeJITDylib(*library),
                           absl::StatusCode::kInternal, "removing a compiled module"));
  }
  state_->dylibs.clear();
  return status;
}

const std::string& CpuJit::host_cpu() const { return state_->host_cpu; }
const std::vector<std::string>& CpuJit::host_features() const { return state_->host_features; }

absl::StatusOr<std::string> CpuJit::EmitAssembly(const std::string& llvm_ir_text) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  llvm::LLVMContext context;
  GTCO_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module, state_->Parse(llvm_ir_text, context));
  OptimizeModule(*module, *state_->target_machine);
  llvm::SmallString<0> assembly;
  llvm::raw_svector_ostream stream(assembly);
  llvm::legacy::PassManager passes;
  if (state_->target_machine->addPassesToEmitFile(passes, stream, nullptr,
                                                  llvm::CGFT_AssemblyFile)) {
    return absl::InternalError("the target machine cannot emit assembly");
  }
  passes.run(*module);
  return std::string(assembly.str());
}

}  // namespace gtco::codegen
