// SPDX-License-Identifier: GPL-2.0-only
#include "optimize.h"

#include <clang/Basic/TargetInfo.h>
#include <clang/CodeGen/BackendUtil.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/Triple.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

namespace histd::cc_server {

namespace {

// After the BPF target's own passes and the always-inliner (LLVM's -O0
// pipeline): fold the helpers' pointers to calls by number, then what -O2's
// function simplification does, once: its loop passes too, for a string
// predicate's loops (rotated, with their induction variables simplified, or
// the verifier walks a multi-segment glob past its million instructions),
// ending with the SimplifyCFG the BPF target adds at -O2's peephole point
// (LLVM 14 does not let a pipeline of one's own call that point's
// callbacks). Then drop the arguments a `noinline` trigger no longer reads
// (the entry passes ctx and the record, the same pointer), and tidy the
// calls that leaves.
constexpr const char* kPipeline =
    "globalopt,function(sroa,early-cse<memssa>,simplifycfg,instcombine,loop-mssa(loop-rotate,licm),"
    "loop(indvars,loop-deletion),instcombine,gvn,sccp,simplifycfg,dse,adce,simplifycfg<hoist-common-insts>),"
    "deadargelim,function(instcombine,simplifycfg)";

// The backend's diagnostics (clang's code generation installs its own
// handler only around its own actions; without one, LLVM prints an error
// and exits the process). The BPF backend's refusals (a stack over 512
// bytes, an unsupported call) are worded as clang's first line of them:
// `unit.c:LINE:COL: error: MESSAGE`.
class BackendDiagnostics : public llvm::DiagnosticHandler {
 public:
  BackendDiagnostics(llvm::raw_ostream& out, bool warnings_are_errors, bool& failed)
      : out_(out), warnings_are_errors_(warnings_are_errors), failed_(failed) {}

  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    const llvm::DiagnosticSeverity severity = info.getSeverity();
    if (severity != llvm::DS_Error && severity != llvm::DS_Warning) return true;
    const bool error = severity == llvm::DS_Error || warnings_are_errors_;
    const auto* unsupported = llvm::dyn_cast<llvm::DiagnosticInfoUnsupported>(&info);
    if (unsupported && unsupported->isLocationAvailable()) out_ << unsupported->getLocationStr() << ": ";
    out_ << (error ? "error: " : "warning: ");
    if (unsupported) {
      out_ << unsupported->getMessage();
    } else {
      llvm::DiagnosticPrinterRawOStream printer(out_);
      info.print(printer);
    }
    out_ << "\n";
    if (error) failed_ = true;
    return true;
  }

 private:
  llvm::raw_ostream& out_;
  bool warnings_are_errors_;
  bool& failed_;
};

// The short pipeline, with the BPF target's callbacks registered as clang
// registers them.
bool optimize(llvm::Module& module, clang::CompilerInstance& ci, llvm::raw_ostream& diag) {
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(module.getTargetTriple(), error);
  if (!target) {
    diag << "histd-cc: " << error << "\n";
    return false;
  }
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(module.getTargetTriple(), ci.getTargetOpts().CPU,
                                  llvm::join(ci.getTargetOpts().Features, ","), llvm::TargetOptions(), llvm::None));
  if (!machine) {
    diag << "histd-cc: no target machine for " << module.getTargetTriple() << "\n";
    return false;
  }
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(machine.get());
  machine->registerPassBuilderCallbacks(builder);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);

  llvm::ModulePassManager passes = builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  if (llvm::Error e = builder.parsePassPipeline(passes, kPipeline)) {
    diag << "histd-cc: " << llvm::toString(std::move(e)) << "\n";
    return false;
  }
  passes.run(module, modules);
  return true;
}

}  // namespace

bool optimizes_itself(clang::CompilerInstance& ci) {
  // `-target bpf` is the host's byte order: bpfel here, bpfeb on s390x.
  const llvm::Triple::ArchType arch = llvm::Triple(ci.getTargetOpts().Triple).getArch();
  return ci.getFrontendOpts().ProgramAction == clang::frontend::EmitObj &&
         (arch == llvm::Triple::bpfel || arch == llvm::Triple::bpfeb) && ci.getCodeGenOpts().OptimizationLevel > 0 &&
         !ci.getCodeGenOpts().DisableLLVMPasses;
}

bool compile_optimized(clang::CompilerInstance& ci, llvm::SmallVectorImpl<char>& object, llvm::raw_ostream& diag) {
  // The front end as at -O2 (what it emits for the optimizer: lifetime
  // markers, no optnone), none of clang's passes after it.
  ci.getCodeGenOpts().DisableLLVMPasses = true;
  llvm::LLVMContext context;
  clang::EmitLLVMOnlyAction front_end(&context);
  if (!ci.ExecuteAction(front_end) || ci.getDiagnostics().hasErrorOccurred()) return false;
  std::unique_ptr<llvm::Module> module = front_end.takeModule();
  if (!module) return false;

  bool failed = false;
  context.setDiagnosticHandler(
      std::make_unique<BackendDiagnostics>(diag, ci.getDiagnostics().getWarningsAsErrors(), failed));
  if (!optimize(*module, ci, diag)) return false;
  clang::EmitBackendOutput(ci.getDiagnostics(), ci.getHeaderSearchOpts(), ci.getCodeGenOpts(), ci.getTargetOpts(),
                           ci.getLangOpts(), ci.getTarget().getDataLayoutString(), module.get(), clang::Backend_EmitObj,
                           std::make_unique<llvm::raw_svector_ostream>(object));
  return !failed && !ci.getDiagnostics().hasErrorOccurred();
}

}  // namespace histd::cc_server
