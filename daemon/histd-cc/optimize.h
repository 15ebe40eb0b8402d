// SPDX-License-Identifier: GPL-2.0-only
// How histd-cc optimizes a generated unit: not with clang's -O2 pipeline
// but with a short one of its own, then clang's own BPF code generation.
//
// Why: of a one-trigger unit's ~30 ms compile in this process, -O2's
// middle end was 13 ms (its inliner's walk over the call graph re-running
// the function simplification passes, InstCombine), and it bought nothing a
// generated unit needs: histd's code already says what to inline (every
// helper and a lone trigger `__always_inline`, triggers of a shared unit
// `noinline`), has no loop worth unrolling or vectorizing, and reads no
// field twice. The short pipeline (about 5 ms) folds the helper pointers
// (globalopt), puts locals in registers (SROA), simplifies and removes what
// the inlined helpers left (EarlyCSE, InstCombine, GVN, SCCP, DSE, ADCE,
// SimplifyCFG), rotates a string predicate's loops and simplifies their
// induction variables (the verifier needs both), drops arguments nothing
// reads, and runs the BPF target's own IR passes where clang would (its
// pipeline-start and early-simplification passes, which keep the code the
// kernel's verifier accepts, and its peephole). The programs are as small:
// a one-trigger unit is 124 instructions either way.
//
// What is not an object for the BPF target at -O1 or more (the prelude's
// precompile) clang compiles as it would itself.
#pragma once

#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/raw_ostream.h>

namespace clang {
class CompilerInstance;
}

namespace histd::cc_server {

// Whether `ci`'s invocation is one the short pipeline serves.
bool optimizes_itself(clang::CompilerInstance& ci);

// Compiles `ci`'s invocation into `object`: clang's front end, the short
// pipeline, clang's code generation. Diagnostics go where `ci`'s go; the
// BPF backend's own (an unsupported construct) to `diag`, as clang words
// them. False when any error was reported.
bool compile_optimized(clang::CompilerInstance& ci, llvm::SmallVectorImpl<char>& object, llvm::raw_ostream& diag);

}  // namespace histd::cc_server
