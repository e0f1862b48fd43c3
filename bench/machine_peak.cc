// The machine's limits, measured: the fp32 FMA peak (each thread runs independent chains of
// vector FMAs, enough to cover the FMA latency on every port, from registers, for each vector ISA
// the CPU has: AVX-512F, AVX2+FMA), the low-precision dot-product peaks the bf16 and int8 kernels
// run on where the CPU has them (AVX-512 BF16 vdpbf16ps: 32 multiply-adds, 64 flops, an
// instruction; AVX-512 VNNI vpdpbusd: 64 byte multiply-adds, 128 ops) and the memory
// bandwidth (a STREAM-style triad over arrays far
// larger than the caches, and the same over 4 MiB arrays, 12 MiB in all: past a core's L2, within
// a server's L3, where the activations of a batch-1 model's memory-bound kernels live), on 1
// thread and on N (default: every core). What a kernel or a whole
// model may reach on this machine is bounded by them: bench/e2e quotes them beside the models'
// profiles (gtco-run --profile).
//
//   build/bench/machine_peak [--threads N] [--json]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr long kIterations = 20'000'000;
constexpr int kChains = 12;  // independent accumulators: latency 4 x 2 ports, plus slack

using Vec16 = float __attribute__((vector_size(64)));
using Vec8 = float __attribute__((vector_size(32)));

/// kChains chains of `iterations` FMAs each on `Vec` vectors. Each chain depends on its previous
/// value and FP math is not reassociated: nothing folds, and the accumulators stay in registers.
/// Inlined into a wrapper compiled for the ISA, where acc * a + b contracts to one FMA.
template <typename Vec, int kLanes>
inline __attribute__((always_inline)) float Chains(long iterations) {
  Vec acc[kChains];
  for (int chain = 0; chain < kChains; ++chain) acc[chain] = Vec{} + 0.001f * chain;
  const Vec a = Vec{} + 0.999999f, b = Vec{} + 1e-7f;
  for (long it = 0; it < iterations; ++it) {
    for (int chain = 0; chain < kChains; ++chain) acc[chain] = acc[chain] * a + b;
  }
  Vec sum = acc[0];
  for (int chain = 1; chain < kChains; ++chain) sum += acc[chain];
  float total = 0;
  for (int lane = 0; lane < kLanes; ++lane) total += sum[lane];
  return total;
}

__attribute__((target("avx512f"), optimize("fp-contract=fast"))) float ChainsAvx512(long n) {
  return Chains<Vec16, 16>(n);
}

__attribute__((target("avx2,fma"), optimize("fp-contract=fast"))) float ChainsAvx2(long n) {
  return Chains<Vec8, 8>(n);
}

/// kChains chains of `iterations` vdpbf16ps (16 f32 lanes, each + two bf16 products) each.
__attribute__((target("avx512f,avx512bf16"))) float ChainsBf16(long iterations) {
  __m512 acc[kChains];
  for (int chain = 0; chain < kChains; ++chain) acc[chain] = _mm512_set1_ps(0.001f * chain);
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // (1.0, 1.0) in bf16
  const __m512bh b = (__m512bh)_mm512_set1_epi32(0x33d633d6);  // (1e-7, 1e-7)
  for (long it = 0; it < iterations; ++it) {
    for (int chain = 0; chain < kChains; ++chain) acc[chain] = _mm512_dpbf16_ps(acc[chain], a, b);
  }
  __m512 sum = acc[0];
  for (int chain = 1; chain < kChains; ++chain) sum = _mm512_add_ps(sum, acc[chain]);
  float lanes[16];  // (not _mm512_reduce_add_ps: GCC 12 warns inside it)
  _mm512_storeu_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

/// kChains chains of `iterations` vpdpbusd (16 i32 lanes, each + four u8 x s8 products) each.
__attribute__((target("avx512f,avx512vnni"))) float ChainsVnni(long iterations) {
  __m512i acc[kChains];
  for (int chain = 0; chain < kChains; ++chain) acc[chain] = _mm512_set1_epi32(chain);
  const __m512i a = _mm512_set1_epi32(0x01010101), b = _mm512_set1_epi32(0x01020102);
  for (long it = 0; it < iterations; ++it) {
    for (int chain = 0; chain < kChains; ++chain)
      acc[chain] = _mm512_dpbusd_epi32(acc[chain], a, b);
  }
  __m512i sum = acc[0];
  for (int chain = 1; chain < kChains; ++chain) sum = _mm512_add_epi32(sum, acc[chain]);
  int lanes[16];
  _mm512_storeu_si512(lanes, sum);
  float total = 0;
  for (int lane : lanes) total += static_cast<float>(lane);
  return total;
}

/// Triad a = b + s * c over `elements` floats per array, split over `threads` threads, each
/// sweeping its slice `sweeps` times: GB/s of the three streams (best of 3 runs, after one that
/// faults the pages in).
double TriadGBytesPerSecond(int threads, size_t elements, int sweeps = 1) {
  std::vector<float> a(elements, 0.0f), b(elements, 1.0f), c(elements, 2.0f);
  auto run = [&] {
    std::vector<std::thread> pool;
    const auto start = std::chrono::steady_clock::now();
    for (int thread = 0; thread < threads; ++thread) {
      pool.emplace_back([&, thread] {
        const size_t begin = elements * thread / threads, end = elements * (thread + 1) / threads;
        float* out = a.data();
        const float* x = b.data();
        const float* y = c.data();
        for (int sweep = 0; sweep < sweeps; ++sweep) {
          for (size_t i = begin; i < end; ++i) out[i] = x[i] + 0.5f * y[i];
          asm volatile("" : : "r"(out) : "memory");  // each sweep reads and writes again
        }
      });
    }
    for (std::thread& thread : pool) thread.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  run();
  double best = 0;
  for (int repeat = 0; repeat < 3; ++repeat) {
    best = std::max(best, 3.0 * sizeof(float) * elements * sweeps / run() / 1e9);
  }
  if (a[elements / 2] != 2.0f) std::printf(" ");  // the result is used
  return best;
}

struct Isa {
  const char* name;
  int lanes;  ///< multiply-adds per instruction (flops or ops: twice that)
  float (*chains)(long);
};

/// GFLOP/s of `threads` threads running `isa`'s chains at once (best of 3 runs).
double Measure(const Isa& isa, int threads) {
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    std::vector<std::thread> pool;
    std::vector<float> sinks(threads);
    const auto start = std::chrono::steady_clock::now();
    for (int thread = 0; thread < threads; ++thread) {
      pool.emplace_back([&, thread] { sinks[thread] = isa.chains(kIterations); });
    }
    for (std::thread& thread : pool) thread.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double flops = 2.0 * isa.lanes * kChains * static_cast<double>(kIterations) * threads;
    if (sinks[0] == 12345.0f) std::printf(" ");  // the result is used
    best = std::max(best, flops / seconds / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool json = false;
  for (int arg = 1; arg < argc; ++arg) {
    if (std::strcmp(argv[arg], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[arg], "--threads") == 0 && arg + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++arg]));
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--json]\n", argv[0]);
      return 2;
    }
  }
  __builtin_cpu_init();
  std::vector<Isa> isas;
  if (__builtin_cpu_supports("avx512f")) isas.push_back({"avx512f", 16, ChainsAvx512});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    isas.push_back({"avx2+fma", 8, ChainsAvx2});
  }
  std::vector<Isa> dots;  // the low-precision dot products, reported apart from fp32's peak
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16")) {
    dots.push_back({"avx512_bf16", 32, ChainsBf16});
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni")) {
    dots.push_back({"avx512_vnni", 64, ChainsVnni});
  }
  if (isas.empty()) {
    std::fprintf(stderr, "machine_peak: this CPU has neither AVX-512F nor AVX2+FMA\n");
    return 1;
  }
  constexpr size_t kTriadElements = size_t{64} << 20;  // 256 MiB per array
  const double triad_one = TriadGBytesPerSecond(1, kTriadElements);
  const double triad_all = TriadGBytesPerSecond(threads, kTriadElements);
  constexpr size_t kCacheTriadElements = size_t{1} << 20;  // 4 MiB per array
  const double cache_one = TriadGBytesPerSecond(1, kCacheTriadElements, 200);
  const double cache_all = TriadGBytesPerSecond(threads, kCacheTriadElements, 200);
  std::string out = json ? "{\"threads\": " + std::to_string(threads) + ", \"gflops\": {" : "";
  for (size_t index = 0; index < isas.size(); ++index) {
    const double one = Measure(isas[index], 1), all = Measure(isas[index], threads);
    char line[256];
    if (json) {
      std::snprintf(line, sizeof(line), "%s\"%s\": {\"1\": %.1f, \"%d\": %.1f}", index ? ", " : "",
                    isas[index].name, one, threads, all);
    } else {
      std::snprintf(line, sizeof(line),
                    "%-9s fp32 FMA peak: %7.1f GFLOP/s on 1 thread, %7.1f on %d threads\n",
                    isas[index].name, one, all, threads);
    }
    out += line;
  }
  if (json) out += "}, \"dot_peaks\": {";
  for (size_t index = 0; index < dots.size(); ++index) {
    const double one = Measure(dots[index], 1), all = Measure(dots[index], threads);
    char line[256];
    const bool bf16 = std::strcmp(dots[index].name, "avx512_bf16") == 0;
    if (json) {
      std::snprintf(line, sizeof(line), "%s\"%s\": {\"1\": %.1f, \"%d\": %.1f}", index ? ", " : "",
                    dots[index].name, one, threads, all);
    } else {
      std::snprintf(line, sizeof(line), "%-11s %s: %7.1f %s on 1 thread, %7.1f on %d threads\n",
                    dots[index].name, bf16 ? "bf16 dot peak" : "int8 dot peak", one,
                    bf16 ? "GFLOP/s" : "GOP/s", all, threads);
    }
    out += line;
  }
  char line[512];
  if (json) {
    std::snprintf(line, sizeof(line),
                  "}, \"triad_gbytes\": {\"1\": %.1f, \"%d\": %.1f}, "
                  "\"cache_triad_gbytes\": {\"1\": %.1f, \"%d\": %.1f}}\n",
                  triad_one, threads, triad_all, cache_one, threads, cache_all);
  } else {
    std::snprintf(line, sizeof(line),
                  "memory    triad:         %7.1f GB/s    on 1 thread, %7.1f on %d threads\n"
                  "12 MiB    triad:         %7.1f GB/s    on 1 thread, %7.1f on %d threads\n",
                  triad_one, triad_all, threads, cache_one, cache_all, threads);
  }
  out += line;
  std::fputs(out.c_str(), stdout);
  return 0;
}
