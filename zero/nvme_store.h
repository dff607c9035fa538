#pragma once
/// \file nvme_store.h
/// ZeRO-Infinity's swap space (DeepSpeed's `offload_optimizer` / `offload_param` `device: "nvme"`): one
/// rank's tensors kept in files under `nvme_path`, one file per tensor, read and written in place with
/// POSIX pread/pwrite. The layout, one folder per run and rank:
///
/// \verbatim
///   <nvme_path>/minitorch-swap/<run_id>/rank<r>/lock            flock(LOCK_EX) while the rank lives
///                                            .../<name>.swap    e.g. optim.master.swap, param.3.swap
/// \endverbatim
///
/// DeepSpeed's swapper clears its folder (`<nvme_path>/zero_stage_3/<dtype>params/rank<r>/`) at start-up and
/// leaves it behind at exit; here a clean exit removes the rank's folder (the destructor), and a start
/// removes the folders of runs that were killed: run folders under minitorch-swap/ none of whose ranks
/// holds its lock (the kernel drops a killed process's flock). Only names of our own (`lock`, `*.swap`,
/// `rank<r>/`) are removed: anything else in minitorch-swap/ itself or in a killed run's folder makes the
/// start refuse with its path, removing nothing; the rest of nvme_path is never touched. Start-up and
/// clean-up hold flock on nvme_path itself, so a run never sees another one half made or half removed.
///
/// Direct I/O: files are opened O_DIRECT (the page cache keeps no second copy of what was swapped out)
/// when the filesystem takes it; O_DIRECT needs the buffer, the file offset and the length aligned to
/// kAlignment, and callers pass any byte range (a tile of a shard), so requests go through aligned bounce
/// buffers of `aio.block_size` bytes (a partially covered first or last block is read, patched and
/// written back). Where the filesystem refuses O_DIRECT (ramfs; tmpfs before Linux 6.6) the store falls
/// back to buffered I/O and says so once: direct() is false and why_not_direct() says why.
///
/// \code
///   zero::NvmeStore store(cfg.nvme_path, run_id, world.rank(), cfg.aio);
///   for (const auto& l : store.removed_leftovers()) log << "removed " << l.folder << ", " << l.bytes << " bytes\n";
///   if (!store.direct()) log << "warning: " << store.why_not_direct() << "\n";
///   store.reserve("optim.master", 4 * n);                 // bytes; a full disk fails here, before step 1
///   store.write("optim.master", 4 * first, tile, 4 * count);
///   store.read("optim.master", 4 * first, tile, 4 * count);
/// \endcode
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "zero/config.h"

namespace minitorch::zero {

class NvmeStore {
 public:
  /// Bytes to which O_DIRECT buffers, offsets and lengths are aligned: the largest logical block size of
  /// common disks (512 or 4096), and the page size.
  static constexpr std::int64_t kAlignment = 4096;

  /// A killed run's folder that start-up removed, and the bytes on disk that freed.
  struct Leftover {
    std::string folder;
    std::int64_t bytes = 0;
  };
  /// What read() and write() were asked to move since construction (bytes), and the wall-clock seconds
  /// those calls took (their pread/pwrite and bounce copies): bytes / seconds is the swap's throughput.
  struct Counters {
    std::int64_t bytes_read = 0, bytes_written = 0;
    double read_seconds = 0, write_seconds = 0;
  };

  /// Opens this rank's folder `<nvme_path>/minitorch-swap/<run_id>/rank<rank>/`, after removing the
  /// leftovers of killed runs (removed_leftovers()). `nvme_path` must be an existing, writable folder;
  /// `run_id` letters, digits, '.', '-', '_' (runtime::new_run_id()). Throws std::runtime_error, naming
  /// the path, when nvme_path is missing or not writable, when a leftover holds a file that is not ours,
  /// or when a live process holds this run id and rank; std::invalid_argument for a bad `aio`.
  NvmeStore(const std::string& nvme_path, const std::string& run_id, int rank, AioConfig aio = {});
  /// A clean exit: removes this rank's files and folder, and the run folder and minitorch-swap/ once empty.
  ~NvmeStore();
  NvmeStore(const NvmeStore&) = delete;
  NvmeStore& operator=(const NvmeStore&) = delete;

  /// Creates the file of tensor `name` (letters, digits, '.', '-', '_'; e.g. "optim.master", "param.3"),
  /// or grows it, to `bytes` rounded up to kAlignment, and allocates its disk space now (posix_fallocate),
  /// so that a full disk fails here — one std::runtime_error naming the file, the bytes needed and the
  /// bytes free — and not in the middle of a step. New bytes read as zeros; a file never shrinks.
  void reserve(const std::string& name, std::int64_t bytes);
  /// The bytes reserved for `name` (a multiple of kAlignment); 0 if it was never reserved.
  std::int64_t reserved(const std::string& name) const;

  /// Copies `bytes` bytes from `src` into the file of `name` at byte `offset`, or from the file into `dst`:
  /// any offset, length and buffer address; [offset, offset + bytes) must lie inside reserved(name)
  /// (std::invalid_argument otherwise). Thread-safe: different threads may read and write any names at
  /// once, and write disjoint ranges of one name at once (writes sharing a 4 KiB block take turns).
  void write(const std::string& name, std::int64_t offset, const void* src, std::int64_t bytes);
  void read(const std::string& name, std::int64_t offset, void* dst, std::int64_t bytes);

  /// Whether the files are opened O_DIRECT; if not, why (the filesystem refused it), for the run to print.
  bool direct() const { return why_not_direct_.empty(); }
  const std::string& why_not_direct() const { return why_not_direct_; }
  /// This rank's folder, `<nvme_path>/minitorch-swap/<run_id>/rank<rank>`.
  const std::string& folder() const { return folder_; }
  Counters counters() const;
  const std::vector<Leftover>& removed_leftovers() const { return removed_; }

 private:
  struct File;  // one tensor's file: its descriptor, its reserved bytes, the lock of its shared blocks
  File& file(const std::string& name) const;  // throws std::invalid_argument if `name` was never reserved
  /// One read() or write() of `bytes` bytes at byte `offset` of `f`: the request cut into chunks of
  /// block_size bytes, spread over intra_op_parallelism threads, each with its own bounce buffer.
  void transfer(File& f, std::int64_t offset, char* user, std::int64_t bytes, bool writing);
  /// The caller's part of the aligned chunk [c0, c1) (bytes of the file), through `bounce` (block_size
  /// aligned bytes; nullptr under buffered I/O) where O_DIRECT needs it.
  void chunk(File& f, std::int64_t c0, std::int64_t c1, std::int64_t offset, char* user, std::int64_t bytes,
             bool writing, char* bounce);
  void remove_own_folder() noexcept;  // the caller holds the nvme_path lock

  std::string nvme_path_, swap_root_, run_folder_, folder_;
  AioConfig aio_;
  std::string why_not_direct_;
  std::vector<Leftover> removed_;
  int lock_fd_ = -1;          // <folder>/lock, under flock(LOCK_EX) while this store lives
  mutable std::mutex mutex_;  // guards files_ (the map, not the I/O) and counters_
  std::map<std::string, std::unique_ptr<File>> files_;
  Counters counters_;
};

}  // namespace minitorch::zero
