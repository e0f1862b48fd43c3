// Model: mapping, verification, code loading (memfd + dlopen) and the step executor.
#include "runtime/model.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/parallel.h"
#include "runtime/quantize.h"
#include "runtime/reference_ops.h"
#include "runtime/reference_step.h"
#ifdef GTCO_RUNTIME_HAS_CUDA
#include "runtime/cuda_model.h"
#endif
#include "runtime/strides.h"

namespace gtco::runtime {
namespace {

using ParallelFor = void (*)(int64_t, void (*)(int64_t, void*), void*);

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

/// One element of `Bytes` bytes.
template <int Bytes>
inline void CopyElement(const char* src, char* dst) {
  std::memcpy(dst, src, Bytes);
}

/// Copies rows [row_begin, row_end) of the output of shape `out_shape` (row-major; a row is its
/// innermost extent) from `src` at element offset base + sum(index[d] * in_strides[d]). Rows
/// contiguous in the input (most transposes and slices of attention) are one memcpy each; the
/// others (subsampling slices, strided windows) one loop at the innermost input stride.
template <int Bytes>
void StridedCopyRows(const char* src, char* dst, const std::vector<int64_t>& out_shape,
                     const std::vector<int64_t>& in_strides, int64_t base, int64_t row_begin,
                     int64_t row_end) {
  const int rank = static_cast<int>(out_shape.size());
  if (rank == 0) {
    CopyElement<Bytes>(src + base * Bytes, dst);
    return;
  }
  const int64_t row = out_shape[rank - 1], step = in_strides[rank - 1];
  const int outer_rank = rank - 1;
  // The index of the first row, digit by digit, and its input offset.
  std::vector<int64_t> index(outer_rank, 0);
  int64_t offset = base;
  {
    int64_t rest = row_begin;
    for (int dim = outer_rank - 1; dim >= 0; --dim) {
      index[dim] = rest % out_shape[dim];
      rest /= out_shape[dim];
      offset += index[dim] * in_strides[dim];
    }
  }
  for (int64_t r = row_begin; r < row_end; ++r) {
    char* out_row = dst + r * row * Bytes;
    if (step == 1) {
      std::memcpy(out_row, src + offset * Bytes, row * Bytes);
    } else {
      const char* in = src + offset * Bytes;
      for (int64_t c = 0; c < row; ++c)
        CopyElement<Bytes>(in + c * step * Bytes, out_row + c * Bytes);
    }
    for (int dim = outer_rank - 1; dim >= 0; --dim) {
      ++index[dim];
      offset += in_strides[dim];
      if (index[dim] < out_shape[dim]) break;
      offset -= in_strides[dim] * out_shape[dim];
      index[dim] = 0;
    }
  }
}

/// Rows and columns of one tile of TransposeTiles.
constexpr int64_t kTransposeTile = 16;

/// The transposes whose output rows are strided in the input but whose next-to-last output
/// dimension is contiguous there (Kᵀ for Q·Kᵀ, NCHW <-> NHWC): out[o, r, c] = in[offset(o) +
/// r + c * column_stride], copied in kTransposeTile-square tiles so both sides move whole cache
/// lines. Work item `item` is one band of kTransposeTile rows of one outer index.
template <int Bytes>
void TransposeTiles(const char* src, char* dst, const std::vector<int64_t>& out_shape,
                    const std::vector<int64_t>& in_strides, int64_t base, int64_t item) {
  const int rank = static_cast<int>(out_shape.size());
  const int64_t rows = out_shape[rank - 2], cols = out_shape[rank - 1];
  const int64_t column_stride = in_strides[rank - 1];
  const int64_t bands = (rows + kTransposeTile - 1) / kTransposeTile;
  int64_t outer = item / bands;
  const int64_t row_begin = (item % bands) * kTransposeTile;
  const int64_t row_end = std::min(rows, row_begin + kTransposeTile);
  int64_t offset = base;
  const int64_t out_base = outer * rows * cols;
  for (int dim = rank - 3; dim >= 0; --dim) {
    offset += (outer % out_shape[dim]) * in_strides[dim];
    outer /= out_shape[dim];
  }
  for (int64_t col_begin = 0; col_begin < cols; col_begin += kTransposeTile) {
    const int64_t col_end = std::min(cols, col_begin + kTransposeTile);
    for (int64_t r = row_begin; r < row_end; ++r) {
      char* out_row = dst + (out_base + r * cols) * Bytes;
      const char* in_column = src + (offset + r) * Bytes;
      for (int64_t c = col_begin; c < col_end; ++c) {
        CopyElement<Bytes>(in_column + c * column_stride * Bytes, out_row + c * Bytes);
      }
    }
  }
}

/// Copies below this many bytes run on the calling thread: splitting them costs more than it
/// saves.
constexpr int64_t kParallelCopyBytes = 64 * 1024;

/// What the work items of one strided copy share.
struct CopyJob {
  const char* src;
  char* dst;
  const std::vector<int64_t>* out_shape;
  const std::vector<int64_t>* in_strides;
  int64_t base = 0, num_rows = 0, rows_per_item = 1;
};

/// Runs body(item, job) for every item < items: split over the parallel-for pool when the copy
/// moves `bytes` >= kParallelCopyBytes, on the calling thread otherwise. Split because a copy
/// right after a parallel kernel reads lines the other threads wrote: one thread pulling all of
/// them from the other cores' caches took 5-6x as long as with one thread in all (ViT-B/16's
/// attention slices and transposes, 600 KB each).
void RunCopyItems(int64_t items, int64_t bytes, void (*body)(int64_t, void*), void* job) {
  if (bytes >= kParallelCopyBytes) return gtco_parallel_for(items, body, job);
  for (int64_t item = 0; item < items; ++item) body(item, job);
}

/// One input of a concat: `outer` rows of `row` bytes from `src` (back to back) to `dst`, a
/// row every `out_row` bytes; in work items of at least 16 KB (a piece of a row when rows are
/// longer).
void ConcatCopy(const char* src, char* dst, int64_t outer, int64_t row, int64_t out_row) {
  struct Job {
    const char* src;
    char* dst;
    int64_t outer, row, out_row, rows_per_item, pieces_per_row;
  };
  constexpr int64_t kItemBytes = 16 * 1024;
  Job job{src,
          dst,
          outer,
          row,
          out_row,
          std::max<int64_t>(1, kItemBytes / std::max<int64_t>(1, row)),
          std::max<int64_t>(1, row / kItemBytes)};
  const int64_t items = job.pieces_per_row > 1
                            ? outer * job.pieces_per_row
                            : (outer + job.rows_per_item - 1) / job.rows_per_item;
  RunCopyItems(
      items, outer * row,
      [](int64_t item, void* raw) {
        const Job& j = *static_cast<const Job*>(raw);
        if (j.pieces_per_row > 1) {
          const int64_t r = item / j.pieces_per_row, piece = item % j.pieces_per_row;
          const int64_t begin = j.row * piece / j.pieces_per_row;
          const int64_t end = j.row * (piece + 1) / j.pieces_per_row;
          std::memcpy(j.dst + r * j.out_row + begin, j.src + r * j.row + begin, end - begin);
          return;
        }
        const int64_t end = std::min(j.outer, (item + 1) * j.rows_per_item);
        for (int64_t r = item * j.rows_per_item; r < end; ++r) {
          std::memcpy(j.dst + r * j.out_row, j.src + r * j.row, j.row);
        }
      },
      &job);
}

/// StridedCopyRows over the whole output (or TransposeTiles where it applies), in work items.
template <int Bytes>
void StridedCopyOf(const char* src, char* dst, const std::vector<int64_t>& out_shape,
                   const std::vector<int64_t>& in_strides, int64_t base) {
  const int rank = static_cast<int>(out_shape.size());
  int64_t total = 1;
  for (int64_t dim : out_shape) total *= dim;
  if (total == 0) return;
  const int64_t row = rank > 0 ? out_shape[rank - 1] : 1;
  CopyJob job{src, dst, &out_shape, &in_strides, base, total / row};
  if (rank >= 2 && in_strides[rank - 1] != 1 && in_strides[rank - 2] == 1) {
    const int64_t rows = out_shape[rank - 2];
    const int64_t items = job.num_rows / rows * ((rows + kTransposeTile - 1) / kTransposeTile);
    return RunCopyItems(
        items, total * Bytes,
        [](int64_t item, void* raw) {
          const CopyJob& j = *static_cast<const CopyJob*>(raw);
          TransposeTiles<Bytes>(j.src, j.dst, *j.out_shape, *j.in_strides, j.base, item);
        },
        &job);
  }
  // Items of at least 16 KB each.
  job.rows_per_item = std::max<int64_t>(1, (16 * 1024) / std::max<int64_t>(1, row * Bytes));
  RunCopyItems((job.num_rows + job.rows_per_item - 1) / job.rows_per_item, total * Bytes,
               [](int64_t item, void* raw) {
                 const CopyJob& j = *static_cast<const CopyJob*>(raw);
                 const int64_t begin = item * j.rows_per_item;
                 StridedCopyRows<Bytes>(j.src, j.dst, *j.out_shape, *j.in_strides, j.base, begin,
                                        std::min(j.num_rows, begin + j.rows_per_item));
               },
               &job);
}

void StridedCopy(const char* src, char* dst, int64_t bytes, const std::vector<int64_t>& out_shape,
                 const std::vector<int64_t>& in_strides, int64_t base) {
  switch (bytes) {
    case 1:
      return StridedCopyOf<1>(src, dst, out_shape, in_strides, base);
    case 2:
      return StridedCopyOf<2>(src, dst, out_shape, in_strides, base);
    case 4:
      return StridedCopyOf<4>(src, dst, out_shape, in_strides, base);
    default:
      return StridedCopyOf<8>(src, dst, out_shape, in_strides, base);
  }
}

/// Expand, Equal and Where over broadcast inputs, a run of the innermost dim at a time (a run's
/// input is contiguous or one repeated element): `value_bytes` the size of the values copied or
/// compared (Where's inputs 1 and 2, Equal's and Expand's input 0).
enum class BroadcastOp { kExpand, kEqual, kWhere };

template <typename T>
void BroadcastRunOf(BroadcastOp op, const std::vector<const char*>& sources,
                    const std::vector<int64_t>& steps, const std::vector<int64_t>& at,
                    int64_t count, char* out, bool float_compare) {
  switch (op) {
    case BroadcastOp::kExpand: {
      const T* src = reinterpret_cast<const T*>(sources[0]) + at[0];
      T* dst = reinterpret_cast<T*>(out);
      if (steps[0] == 1) {
        std::memcpy(dst, src, sizeof(T) * count);
      } else {
        for (int64_t i = 0; i < count; ++i) dst[i] = src[i * steps[0]];
      }
      return;
    }
    case BroadcastOp::kEqual: {
      const T* a = reinterpret_cast<const T*>(sources[0]) + at[0];
      const T* b = reinterpret_cast<const T*>(sources[1]) + at[1];
      for (int64_t i = 0; i < count; ++i) {
        bool same;
        if (float_compare) {
          float x, y;
          std::memcpy(&x, a + i * steps[0], 4);
          std::memcpy(&y, b + i * steps[1], 4);
          same = x == y;
        } else {
          same = std::memcmp(a + i * steps[0], b + i * steps[1], sizeof(T)) == 0;
        }
        out[i] = same ? 1 : 0;
      }
      return;
    }
    case BroadcastOp::kWhere: {
      const char* cond = sources[0] + at[0];
      const T* x = reinterpret_cast<const T*>(sources[1]) + at[1];
      const T* y = reinterpret_cast<const T*>(sources[2]) + at[2];
      T* dst = reinterpret_cast<T*>(out);
      for (int64_t i = 0; i < count; ++i) {
        dst[i] = cond[i * steps[0]] != 0 ? x[i * steps[1]] : y[i * steps[2]];
      }
      return;
    }
  }
}

void BroadcastStep(BroadcastOp op, const std::vector<int64_t>& out_shape,
                   const std::vector<std::vector<int64_t>>& strides,
                   const std::vector<const char*>& sources, int64_t value_bytes, bool float_compare,
                   char* out) {
  std::vector<int64_t> steps;
  for (const std::vector<int64_t>& input : strides) {
    steps.push_back(input.empty() ? 0 : input.back());
  }
  const int64_t out_bytes = op == BroadcastOp::kEqual ? 1 : value_bytes;
  ForEachBroadcastRun(
      out_shape, strides, [&](int64_t flat, const std::vector<int64_t>& at, int64_t count) {
        char* dst = out + flat * out_bytes;
        switch (value_bytes) {
          case 1:
            return BroadcastRunOf<uint8_t>(op, sources, steps, at, count, dst, float_compare);
          case 2:
            return BroadcastRunOf<uint16_t>(op, sources, steps, at, count, dst, float_compare);
          case 4:
            return BroadcastRunOf<uint32_t>(op, sources, steps, at, count, dst, float_compare);
          default:
            return BroadcastRunOf<uint64_t>(op, sources, steps, at, count, dst, float_compare);
        }
      });
}

}  // namespace

struct Model::Mapping {
  void* address = MAP_FAILED;
  size_t length = 0;
  ~Mapping() {
    if (address != MAP_FAILED) munmap(address, length);
  }
};

std::vector<std::string> HostCpuFeatures() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::vector<std::string> flags = absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipEmpty());
    // AMX counts only where Linux grants this process the tile state (asked for here, once).
    DropAmxUnlessUsable(&flags);
    std::sort(flags.begin(), flags.end());
    return flags;
  }
  return {};
}

Model::~Model() {
  if (library_ != nullptr) dlclose(library_);
  if (code_fd_ >= 0) close(code_fd_);
}

absl::StatusOr<ArtifactView> Model::MapArtifact(const std::string& path, Mapping* mapping) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot open artifact '", path, "': ", std::strerror(errno)));
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || info.st_size == 0) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat("artifact '", path, "' is empty"));
  }
  mapping->length = static_cast<size_t>(info.st_size);
  mapping->address = mmap(nullptr, mapping->length, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (mapping->address == MAP_FAILED) {
    return absl::InternalError(absl::StrCat("cannot map '", path, "': ", std::strerror(errno)));
  }
  absl::StatusOr<ArtifactView> view =
      ReadArtifact(std::string_view(static_cast<const char*>(mapping->address), mapping->length));
  if (!view.ok()) {
    return absl::Status(view.status().code(), absl::StrCat(path, ": ", view.status().message()));
  }
  return view;
}

// The kernels stream the weights once per run (ResNet-50: 100 MB, layer 4's convolutions 4-8 MiB
// each). In a buffer of their own with transparent huge pages advised (2 MiB, where the kernel
// grants them: THP "always" or "madvise") instead of the file mapping's 4 KiB page-cache pages,
// ResNet-50's layer-4 convolutions ran 10-15 µs faster each and the model 19.09 -> 18.90 ms
// (AMD Zen 5, 2 threads, alternated). The likely cause, a TLB walk and a restarted prefetch
// stream every 4 KiB, is inferred: this VM has no hardware counters to show it. The copy also
// makes a loaded model independent of its file's later fate. The mapping's pages of the weights
// are dropped from this process as they are copied (they stay in the page cache only).
void Model::CopyWeights(std::string_view weights) {
  if (weights.empty()) return;
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t alignment = weights.size() >= kHugePage ? kHugePage : 64;
  const size_t bytes = (weights.size() + alignment - 1) / alignment * alignment;
  char* copy = static_cast<char*>(std::aligned_alloc(alignment, bytes));
  if (copy == nullptr) return;                                      // the mapping serves
  if (alignment == kHugePage) madvise(copy, bytes, MADV_HUGEPAGE);  // advice; no error if refused
  // A huge page at a time, each chunk's mapped pages dropped once copied: the process never
  // holds both copies (peak RSS as when the kernels read the mapping).
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(weights.data());
  for (size_t done = 0; done < weights.size(); done += kHugePage) {
    const size_t chunk = std::min(kHugePage, weights.size() - done);
    std::memcpy(copy + done, weights.data() + done, chunk);
    const uintptr_t begin = (start + done + page - 1) / page * page;
    const uintptr_t end = (start + done + chunk) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }
  weights_copy_.reset(copy);
  weights_ = copy;
}

absl::StatusOr<Manifest> Model::ReadManifest(const std::string& path) {
  Mapping mapping;
  absl::StatusOr<ArtifactView> view = MapArtifact(path, &mapping);
  if (!view.ok()) return view.status();
  return std::move(view->manifest);
}

absl::StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path) {
  std::unique_ptr<Model> model(new Model());
  model->mapping_ = std::make_unique<Mapping>();
  absl::StatusOr<ArtifactView> view = MapArtifact(path, model->mapping_.get());
  if (!view.ok()) return view.status();
  model->manifest_ = std::move(view->manifest);
  model->weights_ = view->weights.data();
  const Manifest& m = model->manifest_;
  if (m.target == "cuda") {
#ifdef GTCO_RUNTIME_HAS_CUDA
    absl::StatusOr<std::unique_ptr<CudaExecutor>> cuda =
        CudaExecutor::Create(m, view->code, view->weights);
    if (!cuda.ok()) {
      return absl::Status(cuda.status().code(), absl::StrCat(path, ": ", cuda.status().message()));
    }
    model->cuda_ = std::move(*cuda);
    return model;
#else
    return absl::UnimplementedError(absl::StrCat(
        path,
        ": a CUDA artifact, and this runtime was built without the CUDA headers (rebuild "
        "it where scripts/setup.sh installs them)"));
#endif
  }
  model->CopyWeights(view->weights);
  model->reference_nodes_.resize(m.steps.size());
  for (size_t index = 0; index < m.steps.size(); ++index) {
    if (m.steps[index].op != "reference") continue;
    absl::StatusOr<reference::Node> node = reference::NodeFromJson(m.steps[index].reference);
    if (!node.ok()) {  // ManifestFromJson checked it already
      return absl::DataLossError(absl::StrCat(path, ": ", node.status().message()));
    }
    model->reference_nodes_[index] = std::make_unique<reference::Node>(std::move(*node));
  }
  const std::vector<std::string> host = HostCpuFeatures();
  std::vector<std::string> missing;
  for (const std::string& feature : m.features) {
    if (!std::binary_search(host.begin(), host.end(), feature)) missing.push_back(feature);
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " was compiled for ", m.cpu, " and needs CPU feature",
                     missing.size() > 1 ? "s " : " ", absl::StrJoin(missing, ", "),
                     " that this host lacks; export it for this host's instruction set"));
  }
  // The shared object is loaded from memory: no file is written, nothing is left behind.
  const int code_fd = memfd_create("gtco-artifact-code", MFD_CLOEXEC);
  if (code_fd < 0) return absl::InternalError("memfd_create failed");
  model->code_fd_ = code_fd;  // closed by ~Model, after dlclose
  size_t written = 0;
  while (written < view->code.size()) {
    const ssize_t n = write(code_fd, view->code.data() + written, view->code.size() - written);
    if (n <= 0) return absl::InternalError("writing the code to memory failed");
    written += static_cast<size_t>(n);
  }
  const std::string fd_path = absl::StrCat("/proc/self/fd/", code_fd);
  model->library_ = dlopen(fd_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (model->library_ == nullptr) {
    return absl::DataLossError(absl::StrCat(path, ": its code does not load: ", dlerror()));
  }
  // Parallel loops of the kernels call this process's thread pool through one pointer.
  void* hook = dlsym(model->library_, "gtco_rt_parallel_for");
  if (hook == nullptr) return absl::DataLossError(absl::StrCat(path, ": no parallel-for hook"));
  *static_cast<ParallelFor*>(hook) = &gtco_parallel_for;
  for (const KernelSpec& kernel : m.kernels) {
    void* entry = dlsym(model->library_, kernel.entry.c_str());
    if (entry == nullptr) {
      return absl::DataLossError(
          absl::StrCat(path, ": kernel '", kernel.entry, "' is missing from its code"));
    }
    model->entries_.push_back(reinterpret_cast<void (*)(void**)>(entry));
  }
  return model;
}

Model::Arena Model::TakeArena() const {
  {
    std::lock_guard<std::mutex> lock(arenas_mutex_);
    if (!free_arenas_.empty()) {
      Arena arena = std::move(free_arenas_.back());
      free_arenas_.pop_back();
      return arena;
    }
  }
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(manifest_.arena_bytes, 64));
  return Arena(static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)), &std::free);
}

void Model::GiveBack(Arena arena) const {
  if (arena == nullptr) return;
  std::lock_guard<std::mutex> lock(arenas_mutex_);
  free_arenas_.push_back(std::move(arena));
}

StepTime StepTimeOf(const Manifest& m, const StepSpec& step, double seconds) {
  if (step.kernel < 0) return StepTime{step.op, step.node, "", seconds};
  const KernelSpec& kernel = m.kernels[step.kernel];
  return StepTime{step.op, step.node, kernel.description, seconds, kernel.flops, kernel.min_bytes};
}

absl::StatusOr<std::vector<OutputTensor>> Model::Run(const std::vector<HostTensor>& inputs,
                                                     std::vector<StepTime>* profile) const {
  return RunAllocating(inputs, profile, nullptr);
}

absl::Status Model::RunInto(const std::vector<HostTensor>& inputs,
                            const std::vector<void*>& outputs,
                            std::vector<StepTime>* profile) const {
  return RunSteps(inputs, outputs, profile, nullptr);
}

absl::StatusOr<std::vector<OutputTensor>> Model::RunObserved(const std::vector<HostTensor>& inputs,
                                                             const StepObserver& observer) const {
  return RunAllocating(inputs, nullptr, &observer);
}

absl::StatusOr<std::vector<OutputTensor>> Model::RunAllocating(
    const std::vector<HostTensor>& inputs, std::vector<StepTime>* profile,
    const StepObserver* observer) const {
  std::vector<OutputTensor> outputs;
  std::vector<void*> buffers;
  for (int index : manifest_.outputs) {
    const TensorSpec& t = manifest_.tensors[index];
    outputs.push_back(OutputTensor{t.name, t.dtype, t.shape, std::vector<char>(t.Bytes())});
  }
  for (OutputTensor& output : outputs) buffers.push_back(output.bytes.data());
  absl::Status status = RunSteps(inputs, buffers, profile, observer);
  if (!status.ok()) return status;
  return outputs;
}

absl::Status Model::RunSteps(const std::vector<HostTensor>& inputs,
                             const std::vector<void*>& outputs, std::vector<StepTime>* profile,
                             const StepObserver* observer) const {
  const Manifest& m = manifest_;
  if (inputs.size() != m.inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model takes ", m.inputs.size(), " inputs, got ", inputs.size()));
  }
  if (outputs.size() != m.outputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the model has ", m.outputs.size(),
                                                   " outputs, got ", outputs.size(), " buffers"));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& t = m.tensors[m.inputs[i]];
    if (inputs[i].dtype != t.dtype || inputs[i].shape != t.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", t.name, "' must be ", ElemTypeName(t.dtype), " ", ShapeText(t.shape), ", got ",
          ElemTypeName(inputs[i].dtype), " ", ShapeText(inputs[i].shape)));
    }
    if (inputs[i].data == nullptr && t.Bytes() > 0) {
      return absl::InvalidArgumentError(absl::StrCat("input '", t.name, "' has no data"));
    }
  }
#ifdef GTCO_RUNTIME_HAS_CUDA
  if (cuda_ != nullptr) return cuda_->Run(inputs, outputs, profile);
#endif
  // This run's arena (64-byte aligned), back to the pool when the run ends.
  Arena arena = TakeArena();
  if (arena == nullptr) return absl::ResourceExhaustedError("cannot allocate the arena");
  struct Return {
    const Model* model;
    Arena* arena;
    ~Return() { model->GiveBack(std::move(*arena)); }
  } give_back{this, &arena};
  auto data = [&](int index) -> char* {
    const TensorSpec& t = m.tensors[index];
    if (t.weight) return const_cast<char*>(weights_ + t.weight_offset);
    return arena.get() + m.storages[t.storage].offset;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& t = m.tensors[m.inputs[i]];
    std::memcpy(data(m.inputs[i]), inputs[i].data, t.Bytes());
  }
  std::vector<void*> args;
  std::vector<const char*> observed;
  for (size_t step_index = 0; step_index < m.steps.size(); ++step_index) {
    const StepSpec& step = m.steps[step_index];
    const auto start = std::chrono::steady_clock::now();
    const TensorSpec& out = m.tensors[step.outputs[0]];
    char* out_data = data(step.outputs[0]);
    if (step.op == "kernel") {
      args.clear();
      for (int input : step.inputs) args.push_back(data(input));
      args.push_back(out_data);
      entries_[step.kernel](args.data());
    } else if (step.op == "copy") {
      std::memmove(out_data, data(step.inputs[0]), out.Bytes());
    } else if (step.op == "transpose") {
      StridedCopy(data(step.inputs[0]), out_data, ElemSize(out.dtype), out.shape,
                  TransposeStrides(m.tensors[step.inputs[0]].shape, step.params), 0);
    } else if (step.op == "slice") {
      int64_t base = 0;
      const std::vector<int64_t> strides =
          SliceStrides(m.tensors[step.inputs[0]].shape, step.params, &base);
      const char* src = data(step.inputs[0]);
      // A contiguous run the export placed the output on (a view) is there already.
      if (src + base * ElemSize(out.dtype) != out_data || !IsContiguousView(out.shape, strides)) {
        StridedCopy(src, out_data, ElemSize(out.dtype), out.shape, strides, base);
      }
    } else if (step.op == "strided") {
      StridedCopy(data(step.inputs[0]), out_data, ElemSize(out.dtype), out.shape,
                  std::vector<int64_t>(step.params.begin() + 1, step.params.end()), step.params[0]);
    } else if (step.op == "concat") {
      const int64_t axis = step.params.at(0);
      int64_t outer = 1, inner = ElemSize(out.dtype);
      for (int64_t dim = 0; dim < axis; ++dim) outer *= out.shape[dim];
      for (size_t dim = axis + 1; dim < out.shape.size(); ++dim) inner *= out.shape[dim];
      const int64_t out_row = out.shape[axis] * inner;
      int64_t at = 0;
      for (int input : step.inputs) {
        const int64_t row = m.tensors[input].shape[axis] * inner;
        const char* src = data(input);
        // An input the export placed at its run of the output (outer == 1) is there already.
        if (outer > 1 || src != out_data + at) ConcatCopy(src, out_data + at, outer, row, out_row);
        at += row;
      }
    } else if (step.op == "gather") {
      const TensorSpec& in = m.tensors[step.inputs[0]];
      const TensorSpec& indices = m.tensors[step.inputs[1]];
      const GatherGeometry g = GatherGeometryOf(in.shape, step.params.at(0), ElemSize(out.dtype));
      const int64_t outer = g.outer, inner = g.inner_bytes, extent = g.extent;
      const int64_t count = indices.NumElements();
      const char* src = data(step.inputs[0]);
      const char* index_data = data(step.inputs[1]);
      for (int64_t i = 0; i < count; ++i) {
        int64_t index = 0;
        if (indices.dtype == ElemType::kI64) {
          std::memcpy(&index, index_data + 8 * i, 8);
        } else {
          int32_t narrow = 0;
          std::memcpy(&narrow, index_data + 4 * i, 4);
          index = narrow;
        }
        if (index < 0) index += extent;
        if (index < 0 || index >= extent) {
          return absl::InvalidArgumentError(absl::StrCat("Gather at node '", step.node, "': index ",
                                                         index, " of '", indices.name,
                                                         "' is out of range [0, ", extent, ")"));
        }
        for (int64_t o = 0; o < outer; ++o) {
          std::memcpy(out_data + (o * count + i) * inner, src + (o * extent + index) * inner,
                      inner);
        }
      }
    } else if (step.op == "expand" || step.op == "equal" || step.op == "where") {
      std::vector<std::vector<int64_t>> strides;
      std::vector<const char*> sources;
      for (int input : step.inputs) {
        strides.push_back(BroadcastStrides(m.tensors[input].shape, out.shape));
        sources.push_back(data(input));
      }
      const ElemType value_type = m.tensors[step.inputs[step.op == "where" ? 1 : 0]].dtype;
      const BroadcastOp op = step.op == "expand"  ? BroadcastOp::kExpand
                             : step.op == "equal" ? BroadcastOp::kEqual
                                                  : BroadcastOp::kWhere;
      BroadcastStep(op, out.shape, strides, sources, ElemSize(value_type),
                    value_type == ElemType::kF32, out_data);
    } else if (step.op == "dynamic_quantize") {
      DynamicQuantizeU8(reinterpret_cast<const float*>(data(step.inputs[0])), out.NumElements(),
                        reinterpret_cast<uint8_t*>(out_data),
                        reinterpret_cast<float*>(data(step.outputs[1])),
                        reinterpret_cast<uint8_t*>(data(step.outputs[2])));
    } else if (step.op == "dequantize" || step.op == "quantize" || step.op == "fake_quantize") {
      const TensorSpec& in = m.tensors[step.inputs[0]];
      const int64_t axis = step.params.at(0);
      int64_t outer = 1, channels = 1, inner = in.NumElements();
      if (axis >= 0) {
        channels = in.shape[axis];
        outer = 1;
        for (int64_t dim = 0; dim < axis; ++dim) outer *= in.shape[dim];
        inner = in.NumElements() / std::max<int64_t>(outer * channels, 1);
      }
      const void* zero_points = step.inputs.size() > 2 ? data(step.inputs[2]) : nullptr;
      const float* scales = reinterpret_cast<const float*>(data(step.inputs[1]));
      if (step.op == "fake_quantize") {
        FakeQuantize(reinterpret_cast<const float*>(data(step.inputs[0])),
                     step.params.at(1) == 1 ? ElemType::kI8 : ElemType::kU8, outer, channels, inner,
                     scales, zero_points, reinterpret_cast<float*>(out_data));
      } else if (step.op == "quantize") {
        Quantize(reinterpret_cast<const float*>(data(step.inputs[0])), out.dtype, outer, channels,
                 inner, scales, zero_points, out_data);
      } else {
        Dequantize(data(step.inputs[0]), in.dtype, outer, channels, inner, scales, zero_points,
                   reinterpret_cast<float*>(out_data));
      }
    } else if (step.op == "split_bf16x3") {
      const TensorSpec& in = m.tensors[step.inputs[0]];
      const int64_t k = in.shape.back();
      SplitF32ToBf16x3(reinterpret_cast<const float*>(data(step.inputs[0])),
                       k > 0 ? in.NumElements() / k : 0, k, reinterpret_cast<uint16_t*>(out_data));
    } else if (step.op == "split_bf16x3_pairs" || step.op == "cast_bf16_pairs") {
      const TensorSpec& in = m.tensors[step.inputs[0]];
      const int64_t unit[2] = {1, 1};  // params: pads, then strides when not 1
      ConvertF32ToBf16Pairs(reinterpret_cast<const float*>(data(step.inputs[0])), in.shape[0],
                            in.shape[1], in.shape[2], in.shape[3], step.params.data(),
                            step.params.size() == 6 ? step.params.data() + 4 : unit,
                            step.op == "split_bf16x3_pairs", out.shape[1], out.shape[2],
                            reinterpret_cast<uint16_t*>(out_data));
    } else if (step.op == "cast") {
      const TensorSpec& in = m.tensors[step.inputs[0]];
      const char* src = data(step.inputs[0]);
      const int64_t count = out.NumElements();
      if (in.dtype == out.dtype) {
        std::memmove(out_data, src, out.Bytes());
      } else if (out.dtype == ElemType::kF32 && in.dtype == ElemType::kBF16) {
        CastBf16ToF32(reinterpret_cast<const uint16_t*>(src), count,
                      reinterpret_cast<float*>(out_data));
      } else if (out.dtype == ElemType::kF32) {
        for (int64_t i = 0; i < count; ++i) {
          const float value = static_cast<float>(LoadElement(src, in.dtype, i));
          std::memcpy(out_data + 4 * i, &value, 4);
        }
      } else if (out.dtype == ElemType::kBF16 && in.dtype == ElemType::kF32) {
        CastF32ToBf16(reinterpret_cast<const float*>(src), count,
                      reinterpret_cast<uint16_t*>(out_data));
      } else {
        return absl::InternalError(absl::StrCat("step '", step.node, "': no cast from ",
                                                ElemTypeName(in.dtype), " to ",
                                                ElemTypeName(out.dtype)));
      }
    } else if (step.op == "reference") {
      std::vector<const TensorSpec*> in_specs, out_specs;
      std::vector<const char*> in_data;
      std::vector<char*> out_data_list;
      for (int input : step.inputs) {
        in_specs.push_back(input < 0 ? nullptr : &m.tensors[input]);
        in_data.push_back(input < 0 ? nullptr : data(input));
      }
      for (int output : step.outputs) {
        out_specs.push_back(&m.tensors[output]);
        out_data_list.push_back(data(output));
      }
      absl::Status status = RunReferenceStep(*reference_nodes_[step_index], in_specs, in_data,
                                             out_specs, out_data_list);
      if (!status.ok()) return status;
    } else {
      return absl::InternalError(
          absl::StrCat("step '", step.node, "' has unknown op '", step.op, "'"));
    }
    if (profile != nullptr) {
      const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
      profile->push_back(StepTimeOf(m, step, seconds.count()));
    }
    if (observer != nullptr) {
      observed.clear();
      for (int output : step.outputs) observed.push_back(data(output));
      (*observer)(static_cast<int>(step_index), observed);
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorSpec& t = m.tensors[m.outputs[i]];
    std::memcpy(outputs[i], data(m.outputs[i]), t.Bytes());
  }
  return absl::OkStatus();
}

}  // namespace gtco::runtime
