// Internal to cpu/conv: what the convs of an X in the pair layout share (ConvParams::x_pairs,
// ir/conv.h): the AMX conv (conv_amx_sketch.cc) and the AVX-512 BF16 conv (conv_bf16_sketch.cc)
// both compute the padded output grid (output pixel q = oh * Wq + ow, Wq = ConvPairPhaseW; the
// columns ow >= OW computed and dropped), reading tap (r, s) of grid pixel q at word q +
// PairTapWords(r, s) of a pair plane.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"
#include "common/kernels/prepack.h"
#include "common/schedule/epilogue.h"
#include "common/schedule/mapping.h"
#include "common/schedule/sketch.h"
#include "common/schedule/trace.h"

namespace gtco::kernels::internal {

/// Words (pixels) from grid pixel q to what tap (r, s) reads of it in a pair plane: the tap's
/// stride phase (strided convs) and its shift within the phase.
int64_t PairTapWords(const ir::ConvParams& p, int64_t r, int64_t s);
/// The same for tap number `tap` (r * S + s) as an IR expression.
ir::Expr PairTapWordsExpr(const ir::ConvParams& p, const ir::Expr& tap);

/// Whether the bf16 weights of `p` outweigh its images in the pair layout: where they do, a
/// block order that reuses the weights from the cache is searched first.
bool PairConvWeightsOutweighImages(const ir::ConvParams& p);

/// The tasks knob's values of a pair-layout conv: 1, 2, 4, 8 and 16 per core, at most `most`
/// (the blocks there are).
std::vector<int64_t> PairConvTaskChoices(const target::HardwareInfo& hw, int64_t most);

/// The kernel parameters of a pair-layout conv: `w`'s, X and W holding bf16.
std::vector<ir::BufferParam> PairConvParams(const ir::Workload& w);

/// One (pair) step over every tap of `p`: `step(tap, tap_words)` per tap, unrolled up to 9 taps
/// (a 3x3), else in a loop over "tap".
ir::Stmt PairTapSteps(const ir::ConvParams& p,
                      const std::function<ir::Stmt(const ir::Expr&, const ir::Expr&)>& step);

/// OK when `weights` holds K * C * R * S values of `p`'s; INVALID_ARGUMENT saying how many it has.
absl::Status CheckConvWeightCount(const ir::ConvParams& p, const std::vector<float>& weights);

/// The weights W [K, C, R, S] per block of `block` output channels (a divisor of K), per channel
/// pair, per tap, each of the block's channels' words of two values (channels 2q and 2q + 1) in
/// channel order; shape [K, C * R * S]. `trace`, with pack_b 2, becomes the operand's trace.
/// INVALID_ARGUMENT when `weights` has the wrong size.
absl::StatusOr<PrepackedOperand> PackPairConvWeights(const ir::ConvParams& p,
                                                     const std::vector<float>& weights,
                                                     int64_t block, const schedule::Trace& trace);

/// The verdict of a pair-layout conv mapping `mapping`: `mismatch` (why the workload is no conv
/// of its, "" when it is), else a CPU target with every one of `features`, then `applies`.
schedule::MappingVerdict PairConvVerdict(const char* mapping, const std::string& mismatch,
                                         const target::HardwareInfo& hw,
                                         const std::vector<std::string>& features,
                                         const char* applies);

/// Empty when `w` is a conv of a bf16 X in the pair layout and bf16 W writing f32, else why not
/// (`kernel` names the conv in the message).
std::string PairConvDtypeMismatch(const ir::Workload& w, const char* kernel);

/// The write-back of one block of the padded output grid: `channels` output channels from
/// `co0` by `block_cols` grid pixels from `q0` of image `n`, f32 in local buffer `cbuf` from
/// float `c_base` (channel i's pixel q at c_base + i * block_cols + q - q0). Per channel, per
/// output row the block covers, the run of grid pixels inside the row's OW columns as one masked
/// vector range through the conv's epilogue to the NCHW output.
ir::Stmt PairGridWriteBack(const ir::ConvParams& p, int64_t channels, int64_t block_cols,
                           const schedule::EpilogueBuilder& epilogue, const std::string& cbuf,
                           const ir::Expr& c_base, const ir::Expr& n, const ir::Expr& co0,
                           const ir::Expr& q0);

}  // namespace gtco::kernels::internal

namespace gtco::kernels {

/// "conv_avx512_bf16/v1": knobs mr, nr, order, tasks, pack_b (see conv_bf16_sketch.cc).
const schedule::Sketch& ConvAvx512Bf16Sketch();
/// "conv_avx512_bf16_channels/v1": knobs mp, nk, order, tasks, pack_b (see
/// conv_bf16_channels_sketch.cc).
const schedule::Sketch& ConvAvx512Bf16ChannelsSketch();

namespace internal {

inline constexpr char kBf16ConvSketchName[] = "conv_avx512_bf16/v1";
inline constexpr char kBf16ChannelsConvSketchName[] = "conv_avx512_bf16_channels/v1";

/// Empty when `w` is a conv the AVX-512 BF16 conv computes (pair layout, bf16 X and W, f32
/// output); otherwise why not.
std::string Bf16ConvMismatch(const ir::Workload& w);

/// For a conv_avx512_bf16 trace: the weights W [K, C, R, S] (`weights`) as the kernel reads them,
/// per block of mr output channels, per channel pair, per tap, the block's mr words of two bf16
/// values (channels 2q and 2q + 1) one after the other (shape [K, C * R * S]); nullopt for other
/// traces. INVALID_ARGUMENT for a wrong size or a trace that does not fit `w`.
absl::StatusOr<std::optional<PrepackedOperand>> PrepackBf16ConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights);

/// Empty when `w` is a conv the channels-in-lanes AVX-512 BF16 conv computes (as
/// Bf16ConvMismatch, and K a multiple of 16); otherwise why not.
std::string Bf16ChannelsConvMismatch(const ir::Workload& w);

/// For a conv_avx512_bf16_channels trace: the weights W [K, C, R, S] as the kernel reads them,
/// per block of 16 * nk output channels, per channel pair, per tap, the block's words of two bf16
/// values (channels 2q and 2q + 1) in channel order (shape [K, C * R * S]); nullopt for other
/// traces. INVALID_ARGUMENT for a wrong size or a trace that does not fit `w`.
absl::StatusOr<std::optional<PrepackedOperand>> PrepackBf16ChannelsConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights);

}  // namespace internal
}  // namespace gtco::kernels
