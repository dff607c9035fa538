#include "zero/nvme_store.h"

#include "minitorch/allocator.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <iostream>
#include <new>
#include <stdexcept>

namespace minitorch::zero {

namespace fs = std::filesystem;

struct NvmeStore::File {
  std::string path;
  int fd = -1;
  std::atomic<std::int64_t> bytes{0};  // reserved, a multiple of kAlignment
  std::mutex edge;                     // held by a write that patches a block it covers only partly, and by reserve()
};

namespace {
constexpr std::int64_t kAlign = NvmeStore::kAlignment;

std::int64_t round_up(std::int64_t bytes, std::int64_t to) { return (bytes + to - 1) / to * to; }
std::string error_text(int e) { return std::strerror(e); }

/// Letters, digits, '.', '-', '_', 1 to 200 of them, not starting with '.': one safe path component.
bool is_plain_name(const std::string& s) {
  auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_';
  };
  return !s.empty() && s.size() <= 200 && s[0] != '.' && std::all_of(s.begin(), s.end(), plain);
}
bool is_swap_file_name(const std::string& s) {
  return s.ends_with(".swap") && is_plain_name(s.substr(0, s.size() - 5));
}
bool is_rank_folder_name(const std::string& s) {
  return s.size() > 4 && s.starts_with("rank") &&
         std::all_of(s.begin() + 4, s.end(), [](char c) { return c >= '0' && c <= '9'; });
}
bool is_folder(const fs::path& p) {  // a link to one is not ours to remove
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// A full disk (ENOSPC, EDQUOT) while growing or writing `path` by `needed` bytes: one error with the free bytes.
[[noreturn]] void throw_disk_full(const std::string& path, std::int64_t needed, int e) {
  struct statvfs v {};
  const std::string free = ::statvfs(path.c_str(), &v) == 0 ? std::to_string(v.f_bavail * v.f_frsize) : "unknown";
  throw std::runtime_error("NVMe swap: no room on the disk of '" + path + "' (" + error_text(e) + "): it needs " +
                           std::to_string(needed) + " bytes more and " + free +
                           " bytes are free; free space there, or point nvme_path at a larger disk");
}

/// pwrite (writing) or pread all `bytes` bytes at byte `at` of the file, through short counts and EINTR.
void move_all(bool writing, int fd, const std::string& path, char* p, std::int64_t bytes, std::int64_t at) {
  while (bytes > 0) {
    const auto n = static_cast<std::size_t>(bytes);
    const ssize_t done =
        writing ? ::pwrite(fd, p, n, static_cast<off_t>(at)) : ::pread(fd, p, n, static_cast<off_t>(at));
    const int e = done < 0 ? errno : 0;
    if (e == EINTR) continue;
    if (writing && (e == ENOSPC || e == EDQUOT)) throw_disk_full(path, bytes, e);
    if (done <= 0) {
      const std::string why = e != 0 ? error_text(e) : writing ? "nothing was written" : "the file ends there";
      throw std::runtime_error("NVMe swap: " + std::string(writing ? "writing " : "reading ") + std::to_string(bytes) +
                               " bytes at byte " + std::to_string(at) + " of '" + path + "' failed: " + why);
    }
    p += done, bytes -= done, at += done;
  }
}

/// An aligned buffer of `bytes` bytes, as O_DIRECT needs.
std::unique_ptr<char, decltype(&std::free)> aligned_buffer(std::int64_t bytes) {
  void* p = nullptr;
  if (::posix_memalign(&p, static_cast<std::size_t>(kAlign), static_cast<std::size_t>(bytes)) != 0)
    throw std::bad_alloc();
  return {static_cast<char*>(p), &std::free};
}

/// flock(LOCK_EX) on a folder while this lives: the start-ups and clean exits of runs sharing nvme_path
/// take turns, so none sees another's folders half made or half removed.
struct FolderLock {
  int fd, error;
  explicit FolderLock(const std::string& dir) : fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    error = fd < 0 ? errno : 0;
    while (fd >= 0 && ::flock(fd, LOCK_EX) != 0 && errno == EINTR) continue;
  }
  ~FolderLock() {
    if (fd >= 0) ::close(fd);
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
};

/// Whether a live process holds the lock of rank folder `dir` (a killed one's lock went with it).
bool holds_lock(const fs::path& dir) {
  const int fd = ::open((dir / "lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // killed before its lock existed
  const bool live = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);  // drops the lock if we took it
  return live;
}

/// What removing one leftover folder takes: its files and folders in removal order, and their bytes on disk.
struct Removal {
  fs::path folder;
  std::vector<fs::path> paths;
  std::int64_t bytes = 0;
};

[[noreturn]] void throw_foreign(const fs::path& p, const fs::path& where) {
  throw std::runtime_error("NVMe swap: '" + p.string() + "' was not written by minitorch, and it lies in '" +
                           where.string() + "', a swap folder that minitorch removes once its run is gone; " +
                           "move or remove it, then start again");
}

void add_rank_folder(const fs::path& dir, const fs::path& leftover, Removal& r) {
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (name != "lock" && !is_swap_file_name(name)))
      throw_foreign(e.path(), leftover);
    r.paths.push_back(e.path());
    r.bytes += static_cast<std::int64_t>(st.st_blocks) * 512;
  }
  r.paths.push_back(dir);
}

/// The removal of the killed run's folder `run`; throws on anything in it that is not of our naming.
Removal leftover_run(const fs::path& run) {
  Removal r{run, {}, 0};
  for (const fs::directory_entry& e : fs::directory_iterator(run)) {
    if (!is_rank_folder_name(e.path().filename().string()) || !is_folder(e.path())) throw_foreign(e.path(), run);
    add_rank_folder(e.path(), run, r);
  }
  r.paths.push_back(run);
  return r;
}

void remove_leftover(const Removal& r) {
  for (const fs::path& p : r.paths)  // std::remove: unlink a file, rmdir a folder (ENOTEMPTY: a newcomer stays)
    if (std::remove(p.c_str()) != 0) {
      const std::string why = error_text(errno);
      throw std::runtime_error("NVMe swap: cannot remove '" + p.string() + "', left by a killed run (" + why +
                               "); remove it by hand, or point nvme_path at another folder");
    }
}

/// "" when the filesystem of `file` (ours, existing) takes an O_DIRECT write and read of one aligned block,
/// else why not. Leaves the file empty.
std::string direct_io_refusal(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return "open(O_DIRECT): " + error_text(errno);
  const auto block = aligned_buffer(kAlign);
  const auto n = static_cast<std::size_t>(kAlign);
  std::memset(block.get(), 0, n);
  const bool ok = ::pwrite(fd, block.get(), n, 0) == kAlign && ::pread(fd, block.get(), n, 0) == kAlign;
  std::string why = ok ? "" : "an aligned O_DIRECT write and read: " + error_text(errno);
  if (::ftruncate(fd, 0) != 0 && why.empty()) why = "ftruncate: " + error_text(errno);
  ::close(fd);
  return why;
}
}  // namespace

NvmeStore::NvmeStore(const std::string& nvme_path, const std::string& run_id, int rank, AioConfig aio)
    : nvme_path_(nvme_path),
      swap_root_(nvme_path + "/minitorch-swap"),
      run_folder_(swap_root_ + "/" + run_id),
      folder_(run_folder_ + "/rank" + std::to_string(rank)),
      aio_(aio) {
  if (aio.block_size <= 0 || aio.block_size % kAlignment != 0)
    throw std::invalid_argument("aio.block_size " + std::to_string(aio.block_size) +
                                ": it must be a positive multiple of 4096 bytes (the direct-I/O alignment); "
                                "DeepSpeed's default is 1048576");
  if (aio.intra_op_parallelism < 1)
    throw std::invalid_argument("aio.intra_op_parallelism " + std::to_string(aio.intra_op_parallelism) +
                                ": it must be at least 1 (I/O threads per request)");
  if (!is_plain_name(run_id) || rank < 0)
    throw std::invalid_argument("NVMe swap: run id '" + run_id + "', rank " + std::to_string(rank) +
                                ": the run id must be letters, digits, '.', '-', '_', the rank at least 0");
  std::error_code ec;
  if (!fs::is_directory(nvme_path, ec))  // a link to a folder will do
    throw std::runtime_error("nvme_path '" + nvme_path + "' does not exist or is not a folder: create it " +
                             "(a folder on the NVMe disk), or fix the path");
  const FolderLock lock(nvme_path);
  if (lock.error != 0)
    throw std::runtime_error("nvme_path '" + nvme_path + "' cannot be opened (" + error_text(lock.error) +
                             "): give this user access to it, or point nvme_path at another folder");
  auto make_folder = [&](const std::string& p) {
    const int e = ::mkdir(p.c_str(), 0755) == 0 ? 0 : errno;
    if (e == 0 || (e == EEXIST && is_folder(p))) return;
    throw std::runtime_error("nvme_path '" + nvme_path + "' is not writable: creating '" + p + "' failed (" +
                             (e == EEXIST ? "a file of that name is in the way" : error_text(e)) +
                             "); make it writable for this user, or point nvme_path at a writable folder");
  };
  make_folder(swap_root_);

  // Killed runs' folders, all checked before any is removed: a refusal removes nothing.
  std::vector<Removal> removals;
  for (const fs::directory_entry& run : fs::directory_iterator(swap_root_)) {
    if (!is_folder(run.path())) throw_foreign(run.path(), swap_root_);
    if (run.path() == fs::path(run_folder_)) continue;  // our run's: only our rank's folder is ours to clear
    bool live = false;
    for (const fs::directory_entry& r : fs::directory_iterator(run.path()))
      live = live || (is_rank_folder_name(r.path().filename().string()) && is_folder(r.path()) && holds_lock(r.path()));
    if (!live) removals.push_back(leftover_run(run.path()));
  }
  if (fs::exists(fs::symlink_status(folder_))) {  // this run id and rank before: a restart, or a clash
    if (!is_folder(folder_)) throw_foreign(folder_, run_folder_);
    if (holds_lock(folder_))
      throw std::runtime_error("NVMe swap: '" + folder_ + "' is in use by a live process with the same run id " +
                               "and rank; give each run its own run id");
    removals.push_back({folder_, {}, 0});
    add_rank_folder(folder_, folder_, removals.back());
  }
  for (const Removal& r : removals) {
    remove_leftover(r);
    removed_.push_back({r.folder.string(), r.bytes});
  }

  make_folder(run_folder_);
  make_folder(folder_);
  try {
    lock_fd_ = ::open((folder_ + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      const std::string why = error_text(errno);
      throw std::runtime_error("NVMe swap: cannot create and lock '" + folder_ + "/lock' (" + why +
                               "); make nvme_path writable, or point it at another folder");
    }
    if (const std::string why = direct_io_refusal(folder_ + "/lock"); !why.empty())
      why_not_direct_ = "the filesystem of nvme_path '" + nvme_path + "' refuses direct I/O (" + why +
                        "): the swap files use buffered I/O, and the page cache keeps a copy of what is swapped out";
  } catch (...) {
    remove_own_folder();  // under the nvme_path lock, as the destructor's
    throw;
  }
}

NvmeStore::~NvmeStore() {
  const FolderLock lock(nvme_path_);  // if nvme_path cannot be opened now, remove without it
  remove_own_folder();
}

void NvmeStore::remove_own_folder() noexcept {
  auto remove = [](const std::string& p, bool folder) {
    if ((folder ? ::rmdir(p.c_str()) : ::unlink(p.c_str())) != 0 && errno != ENOENT) {
      const std::string why = error_text(errno);
      std::cerr << "warning: NVMe swap: cannot remove '" << p << "': " << why << "\n";
    }
  };
  for (auto& [name, f] : files_) {
    ::close(f->fd);
    remove(f->path, false);
  }
  files_.clear();
  remove(folder_ + "/lock", false);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
  remove(folder_, true);
  ::rmdir(run_folder_.c_str());  // the last rank out takes the run folder, the last run minitorch-swap/
  ::rmdir(swap_root_.c_str());
}

void NvmeStore::reserve(const std::string& name, std::int64_t bytes) {
  if (!is_plain_name(name) || bytes < 0)
    throw std::invalid_argument("NVMe swap: reserve('" + name + "', " + std::to_string(bytes) +
                                "): a name is letters, digits, '.', '-', '_', and bytes are at least 0");
  File* f = nullptr;
  {
    const std::lock_guard<std::mutex> g(mutex_);
    std::unique_ptr<File>& slot = files_[name];
    if (!slot) {
      auto made = std::make_unique<File>();
      made->path = folder_ + "/" + name + ".swap";
      made->fd = ::open(made->path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (direct() ? O_DIRECT : 0), 0644);
      if (made->fd < 0) {
        const int e = errno;
        files_.erase(name);
        throw std::runtime_error("NVMe swap: cannot create '" + made->path + "': " + error_text(e));
      }
      slot = std::move(made);
    }
    f = slot.get();
  }
  const std::lock_guard<std::mutex> g(f->edge);
  const std::int64_t want = round_up(bytes, kAlignment), have = f->bytes;
  if (want <= have) return;
  // The disk space now, so that a full disk fails here; a filesystem without fallocate gets a sparse file.
  if (::fallocate(f->fd, 0, 0, static_cast<off_t>(want)) != 0) {
    const int e = errno;
    if (e != EOPNOTSUPP || ::ftruncate(f->fd, static_cast<off_t>(want)) != 0) {
      // ext4 keeps what a failed fallocate allocated (tmpfs does not): give it back; the error says the rest.
      [[maybe_unused]] const int undone = ::ftruncate(f->fd, static_cast<off_t>(have));
      if (e == ENOSPC || e == EDQUOT) throw_disk_full(f->path, want - have, e);
      throw std::runtime_error("NVMe swap: cannot reserve " + std::to_string(want) + " bytes for '" + f->path +
                               "': " + error_text(e));
    }
  }
  f->bytes = want;
}

std::int64_t NvmeStore::reserved(const std::string& name) const {
  const std::lock_guard<std::mutex> g(mutex_);
  const auto it = files_.find(name);
  return it == files_.end() ? 0 : it->second->bytes.load();
}

NvmeStore::File& NvmeStore::file(const std::string& name) const {
  const std::lock_guard<std::mutex> g(mutex_);
  const auto it = files_.find(name);
  if (it == files_.end())
    throw std::invalid_argument("NVMe swap: no tensor '" + name + "' in '" + folder_ + "': reserve() it first");
  return *it->second;
}

void NvmeStore::write(const std::string& name, std::int64_t offset, const void* src, std::int64_t bytes) {
  // transfer() only reads the caller's buffer when writing.
  transfer(file(name), offset, const_cast<char*>(static_cast<const char*>(src)), bytes, true);
}

void NvmeStore::read(const std::string& name, std::int64_t offset, void* dst, std::int64_t bytes) {
  transfer(file(name), offset, static_cast<char*>(dst), bytes, false);
}

NvmeStore::Counters NvmeStore::counters() const {
  const std::lock_guard<std::mutex> g(mutex_);
  return counters_;
}

void NvmeStore::transfer(File& f, std::int64_t offset, char* user, std::int64_t bytes, bool writing) {
  if (offset < 0 || bytes < 0 || offset + bytes > f.bytes)
    throw std::invalid_argument("NVMe swap: " + std::string(writing ? "writing " : "reading ") + std::to_string(bytes) +
                                " bytes at byte " + std::to_string(offset) + " of '" + f.path + "' goes past its " +
                                std::to_string(f.bytes.load()) + " reserved bytes: reserve() more first");
  if (bytes == 0) return;
  const DiskTransfer counted(writing, bytes);  // TransferStats' disk_read / disk_write, a span in the trace
  const auto start = std::chrono::steady_clock::now();
  // The aligned window over the request, in chunks of block_size bytes; worker w takes a contiguous run of them.
  const std::int64_t lo = offset / kAlignment * kAlignment, hi = round_up(offset + bytes, kAlignment);
  const std::int64_t block = aio_.block_size, chunks = (hi - lo + block - 1) / block;
  const std::int64_t workers = std::clamp<std::int64_t>(chunks, 1, aio_.intra_op_parallelism);
  auto work = [&](std::int64_t w) {
    std::unique_ptr<char, decltype(&std::free)> bounce(nullptr, &std::free);  // buffered I/O needs none
    if (direct()) bounce = aligned_buffer(block);
    for (std::int64_t c = w * chunks / workers; c < (w + 1) * chunks / workers; ++c)
      chunk(f, lo + c * block, std::min(lo + (c + 1) * block, hi), offset, user, bytes, writing, bounce.get());
  };
  std::vector<std::future<void>> others;  // should work(0) throw, their destructors wait for them
  for (std::int64_t w = 1; w < workers; ++w) others.push_back(std::async(std::launch::async, work, w));
  work(0);
  for (std::future<void>& o : others) o.get();  // rethrows a worker's error
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const std::lock_guard<std::mutex> g(mutex_);
  (writing ? counters_.bytes_written : counters_.bytes_read) += bytes;
  (writing ? counters_.write_seconds : counters_.read_seconds) += took.count();
}

void NvmeStore::chunk(File& f, std::int64_t c0, std::int64_t c1, std::int64_t offset, char* user, std::int64_t bytes,
                      bool writing, char* bounce) {
  const std::int64_t u0 = std::max(c0, offset), u1 = std::min(c1, offset + bytes);  // the caller's bytes in [c0, c1)
  char* const mine = user + (u0 - offset);
  const bool whole = u0 == c0 && u1 == c1;
  if (!bounce || (whole && reinterpret_cast<std::uintptr_t>(mine) % kAlignment == 0))  // buffered, or aligned already
    return move_all(writing, f.fd, f.path, mine, u1 - u0, u0);
  const auto n = static_cast<std::size_t>(u1 - u0);
  if (!writing) {
    move_all(false, f.fd, f.path, bounce, c1 - c0, c0);
    std::memcpy(mine, bounce + (u0 - c0), n);
    return;
  }
  // A first or last block shared with bytes not ours: read it, patch it, write it back, one writer at a time.
  std::unique_lock<std::mutex> edge(f.edge, std::defer_lock);
  if (!whole) edge.lock();
  if (u0 != c0) move_all(false, f.fd, f.path, bounce, kAlignment, c0);
  if (u1 != c1 && (u0 == c0 || c1 - kAlignment != c0))  // not the block just read
    move_all(false, f.fd, f.path, bounce + (c1 - kAlignment - c0), kAlignment, c1 - kAlignment);
  std::memcpy(bounce + (u0 - c0), mine, n);
  move_all(true, f.fd, f.path, bounce, c1 - c0, c0);
}

}  // namespace minitorch::zero
