// TileMatMul statements as x86 AMX code: the C tiles zeroed (or loaded, to accumulate), a loop over the K steps loading mr
// A tiles and nr B tiles and issuing mr * nr tile dot products, the C tiles stored.
// The tile configuration (all 8 tiles 16 rows of 64 bytes, the same for every statement) is
// loaded once at the entry of each function that has tile statements (ldtilecfg costs about as
// much as 13 tile products), again after each parallel loop whose body used (and released) the
// tiles on this thread, and the tile state is released at its return (so a context switch
// saves no tile data between kernels). Every ldtilecfg finds the tiles released: on the Emerald
// Rapids VM here, loading a configuration over a configured one made a 128x768x768 bf16 matmul
// 2.7x slower (294 vs 108 us a call in a scratch loop, with and without tilerelease between).
// Tile registers: C (t, c) is tmm[t * nr + c], A_t is tmm[mr * nr + t], B_c is
// tmm[mr * nr + mr + c].
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/codegen/llvm/function_emitter.h"
#include "common/util/status.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"

namespace gtco::codegen::internal {
namespace {

constexpr int kTileRows = 16;
constexpr int kTileRowBytes = 64;

llvm::Intrinsic::ID DotIntrinsic(const std::string& instruction) {
  if (instruction == "tdpbf16ps") return llvm::Intrinsic::x86_tdpbf16ps;
  if (instruction == "tdpbusd") return llvm::Intrinsic::x86_tdpbusd;
  if (instruction == "tdpbssd") return llvm::Intrinsic::x86_tdpbssd;
  if (instruction == "tdpbsud") return llvm::Intrinsic::x86_tdpbsud;
  if (instruction == "tdpbuud") return llvm::Intrinsic::x86_tdpbuud;
  return llvm::Intrinsic::not_intrinsic;
}

constexpr int kTiles = 8;

/// The 64-byte tile configuration (palette 1) with all 8 tiles 16 x 64 bytes.
llvm::GlobalVariable* TileConfig(llvm::Module* module) {
  const std::string name = "gtco.amx.tilecfg";
  if (llvm::GlobalVariable* existing = module->getGlobalVariable(name, /*AllowInternal=*/true)) {
    return existing;
  }
  std::vector<uint8_t> bytes(64, 0);
  bytes[0] = 1;  // palette 1
  for (int tile = 0; tile < kTiles; ++tile) {
    bytes[16 + 2 * tile] = kTileRowBytes;  // colsb (little-endian u16)
    bytes[48 + tile] = kTileRows;          // rows
  }
  llvm::Constant* init = llvm::ConstantDataArray::get(module->getContext(), bytes);
  auto* global = new llvm::GlobalVariable(*module, init->getType(), /*isConstant=*/true,
                                          llvm::GlobalValue::PrivateLinkage, init, name);
  global->setAlignment(llvm::Align(64));
  return global;
}

}  // namespace

absl::Status FunctionEmitter::EmitTileMatMul(const ir::StmtNode& stmt) {
  if (stmt.operands.size() < 9) return absl::InvalidArgumentError("malformed tile matmul");
  for (int idx = 2; idx < 8; ++idx) {
    if (stmt.operands[idx]->kind != ir::ExprKind::kIntImm) {
      return absl::InvalidArgumentError("tile matmul sizes must be constants");
    }
  }
  if (vector_ != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("a tile matmul inside the vectorized loop '",
                                                   vector_->var, "' is not supported"));
  }
  const ir::TileMatMulArgs args = ir::GetTileMatMulArgs(stmt);
  const llvm::Intrinsic::ID dot = DotIntrinsic(args.instruction);
  if (dot == llvm::Intrinsic::not_intrinsic) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown tile instruction '", args.instruction, "'"));
  }
  const int mr = static_cast<int>(args.a.size()), nr = static_cast<int>(args.nr);
  if (mr * nr + mr + nr > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", mr, " x ", nr, " tile matmul needs more than 8 tile registers"));
  }
  const ir::ScalarType acc_type =
      ir::TileInstructionIsBF16(args.instruction) ? ir::ScalarType::kF32 : ir::ScalarType::kI32;
  auto address = [&](const ir::Expr& load, bool is_c) -> absl::StatusOr<llvm::Value*> {
    GTCO_ASSIGN_OR_RETURN(BufferBinding buffer, LookupBuffer(load->name));
    if (is_c && buffer.elem_type != acc_type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the C buffer '", load->name, "' of a ", args.instruction, " tile matmul holds ",
          ir::ScalarTypeName(buffer.elem_type), ", not ", ir::ScalarTypeName(acc_type)));
    }
    GTCO_ASSIGN_OR_RETURN(llvm::Value * index, EmitUniformI64(load->operands[0], "tile address"));
    return builder_.CreateInBoundsGEP(ScalarLlvmType(*state_->context, buffer.elem_type),
                                      buffer.pointer, index);
  };
  GTCO_ASSIGN_OR_RETURN(llvm::Value * c_address, address(args.c, true));
  GTCO_ASSIGN_OR_RETURN(llvm::Value * b_address, address(args.b, false));
  llvm::Value* prefetch_address = nullptr;
  if (args.prefetch) {
    GTCO_ASSIGN_OR_RETURN(prefetch_address, address(args.prefetch, false));
  }
  std::vector<llvm::Value*> a_addresses;
  for (const ir::Expr& a : args.a) {
    GTCO_ASSIGN_OR_RETURN(llvm::Value * a_address, address(a, false));
    a_addresses.push_back(a_address);
  }

  llvm::Type* i8 = builder_.getInt8Ty();
  auto tile = [&](int index) { return builder_.getInt8(static_cast<uint8_t>(index)); };
  auto c_tile = [&](int t, int c) { return tile(t * nr + c); };
  auto a_tile = [&](int t) { return tile(mr * nr + t); };
  auto b_tile = [&](int c) { return tile(mr * nr + mr + c); };
  uses_tiles_ = true;
  const int64_t c_row_bytes = int64_t{nr} * kTileRowBytes;
  auto c_block = [&](int t, int c) {
    const int64_t offset = int64_t{t} * kTileRows * c_row_bytes + int64_t{c} * kTileRowBytes;
    return builder_.CreateInBoundsGEP(i8, c_address, I64(offset));
  };
  for (int t = 0; t < mr; ++t) {
    for (int c = 0; c < nr; ++c) {
      if (args.accumulate) {
        builder_.CreateIntrinsic(llvm::Intrinsic::x86_tileloadd64, {},
                                 {c_tile(t, c), c_block(t, c), I64(c_row_bytes)});
      } else {
        builder_.CreateIntrinsic(llvm::Intrinsic::x86_tilezero, {}, {c_tile(t, c)});
      }
    }
  }

  // Per tap: for (s = 0; s < k_steps; ++s): load the A and B tiles of step s, then every
  // product (A continues along K from one tap to the next; B restarts at the tap's offset).
  const std::vector<int64_t> taps = args.b_taps.empty() ? std::vector<int64_t>{0} : args.b_taps;
  for (size_t tap = 0; tap < taps.size(); ++tap) {
    const int64_t a_base = static_cast<int64_t>(tap) * args.k_steps * kTileRowBytes;
    llvm::BasicBlock* preheader = builder_.GetInsertBlock();
    llvm::BasicBlock* loop = llvm::BasicBlock::Create(*state_->context, "tile.k", function_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(*state_->context, "tile.k.exit", function_);
    builder_.CreateBr(loop);
    builder_.SetInsertPoint(loop);
    llvm::PHINode* step = builder_.CreatePHI(I64Ty(), 2, "tile.s");
    step->addIncoming(I64(0), preheader);
    llvm::Value* a_offset =
        builder_.CreateAdd(builder_.CreateMul(step, I64(kTileRowBytes)), I64(a_base));
    for (int t = 0; t < mr; ++t) {
      builder_.CreateIntrinsic(llvm::Intrinsic::x86_tileloadd64, {},
                               {a_tile(t), builder_.CreateInBoundsGEP(i8, a_addresses[t], a_offset),
                                I64(args.a_stride)});
    }
    llvm::Value* b_offset = builder_.CreateAdd(
        builder_.CreateMul(step, I64(kTileRows * args.b_row_stride)), I64(taps[tap]));
    for (int c = 0; c < nr; ++c) {
      llvm::Value* offset = builder_.CreateAdd(b_offset, I64(c * args.b_col_stride));
      builder_.CreateIntrinsic(llvm::Intrinsic::x86_tileloadd64, {},
                               {b_tile(c), builder_.CreateInBoundsGEP(i8, b_address, offset),
                                I64(args.b_row_stride)});
    }
    for (int t = 0; t < mr; ++t) {
      for (int c = 0; c < nr; ++c)
        builder_.CreateIntrinsic(dot, {}, {c_tile(t, c), a_tile(t), b_tile(c)});
    }
    if (prefetch_address != nullptr) {
      // This step's share of each region: lines [s * per_step, (s + 1) * per_step), towards L2
      // (prefetcht1); a line past the region is harmless (a prefetch never faults).
      const int64_t lines = (args.prefetch_bytes + 63) / 64;
      const int64_t per_step = (lines + args.k_steps - 1) / args.k_steps;
      llvm::Value* first = builder_.CreateMul(step, I64(per_step * 64));
      for (int c = 0; c < nr; ++c) {
        for (int64_t q = 0; q < per_step; ++q) {
          llvm::Value* offset = builder_.CreateAdd(first, I64(c * args.b_col_stride + q * 64));
          builder_.CreateIntrinsic(llvm::Intrinsic::prefetch, {prefetch_address->getType()},
                                   {builder_.CreateGEP(i8, prefetch_address, offset),
                                    builder_.getInt32(0), builder_.getInt32(2),
                                    builder_.getInt32(1)});
        }
      }
    }
    llvm::Value* next = builder_.CreateNUWAdd(step, I64(1));
    step->addIncoming(next, builder_.GetInsertBlock());
    AttachLoopMetadata(
        builder_.CreateCondBr(builder_.CreateICmpSLT(next, I64(args.k_steps)), loop, exit));
    builder_.SetInsertPoint(exit);
  }

  for (int t = 0; t < mr; ++t) {
    for (int c = 0; c < nr; ++c) {
      builder_.CreateIntrinsic(llvm::Intrinsic::x86_tilestored64, {},
                               {c_tile(t, c), c_block(t, c), I64(c_row_bytes)});
    }
  }
  return absl::OkStatus();
}

void FunctionEmitter::FinishTiles() {
  if (!uses_tiles_) return;
  llvm::GlobalVariable* config = TileConfig(state_->module);
  alloca_builder_.CreateIntrinsic(llvm::Intrinsic::x86_ldtilecfg, {}, {config});
  for (llvm::Instruction* call : tile_reload_points_) {
    // Released first: this thread may have run none of the loop's iterations.
    llvm::IRBuilder<> after(call->getNextNode());
    after.CreateIntrinsic(llvm::Intrinsic::x86_tilerelease, {}, {});
    after.CreateIntrinsic(llvm::Intrinsic::x86_ldtilecfg, {}, {config});
  }
  builder_.CreateIntrinsic(llvm::Intrinsic::x86_tilerelease, {}, {});
}

}  // namespace gtco::codegen::internal
