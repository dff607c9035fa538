// zero/nvme_store.h: the NVMe swap store, on this machine's disk (O_DIRECT) and where direct I/O is refused
// (ramfs: buffered I/O). The full disk, the read-only disk and ramfs are mounts in a mount namespace of a
// forked child's own (root, as CI runs; skipped otherwise), so nothing outside the test sees them; a
// killed run is a forked child that _exits without the destructor.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <thread>

#include "zero/nvme_store.h"

using minitorch::zero::AioConfig;
using minitorch::zero::NvmeStore;
namespace fs = std::filesystem;

namespace {
/// A fresh folder under `base`, removed with everything in it at the end of the test.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& base) {
    std::string t = base + "/mt-nvme-XXXXXX";
    path = ::mkdtemp(t.data()) ? t : "";
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// A folder on a disk (not tmpfs or ramfs): where O_DIRECT means what it says.
std::string disk_base() {
  for (const char* d : {"/var/tmp", "/tmp"}) {
    struct statfs s {};
    if (::statfs(d, &s) == 0 && s.f_type != TMPFS_MAGIC && s.f_type != RAMFS_MAGIC) return d;
  }
  return "";
}

/// Whether `dir`'s filesystem takes an O_DIRECT write of one aligned block (asked apart from the store).
bool takes_o_direct(const std::string& dir) {
  const std::string p = dir + "/probe";
  const int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644);
  alignas(4096) static char block[4096];
  const bool ok = fd >= 0 && ::pwrite(fd, block, 4096, 0) == 4096;
  if (fd >= 0) ::close(fd);
  ::unlink(p.c_str());
  return ok;
}

/// `body()` in a forked child; what it returns ("" for nothing) comes back through a pipe.
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "skip: pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    if (::write(fds[1], out.data(), out.size()) < 0) ::_exit(2);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return out;
}

/// `body()` in a child with a mount namespace of its own, after the shell command `mount` (which mounts a
/// filesystem there); "skip: ..." where that cannot be done (not root, no loop device).
std::string in_mount(const std::string& mount, const std::function<std::string()>& body) {
  return in_child([&]() -> std::string {
    if (::unshare(CLONE_NEWNS) != 0) return std::string("skip: unshare(CLONE_NEWNS): ") + std::strerror(errno);
    if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 || std::system((mount + " 2>&1").c_str()) != 0)
      return "skip: '" + mount + "' failed";
    return body();
  });
}

/// The message of the std::runtime_error that `f` throws ("" if none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

/// Writes random bytes over the whole file from an aligned buffer, then at odd offsets and lengths from
/// unaligned ones, reads each back, and compares every byte of the file with what it must hold; "" if all
/// is exact, else the first difference.
std::string round_trip_problem(NvmeStore& store, const std::string& name) {
  const std::int64_t size = 3 * 1048576 + 4 * 4096;
  store.reserve(name, size);
  std::mt19937 gen(7);
  const std::unique_ptr<unsigned char, decltype(&std::free)> aligned(
      static_cast<unsigned char*>(std::aligned_alloc(4096, static_cast<std::size_t>(size))), &std::free);
  unsigned char* const all = aligned.get();  // under O_DIRECT, straight from and into this buffer
  std::generate(all, all + size, [&] { return static_cast<unsigned char>(gen()); });
  store.write(name, 0, all, size);
  std::vector<unsigned char> want(all, all + size);  // the file's bytes, as they must be
  const std::pair<std::int64_t, std::int64_t> writes[] = {
      {0, 1},    {1, 1},        {4095, 1},          {4095, 2},
      {1, 4095}, {4097, 4097},  {8192, 8192},       {12345, 3 * 1048576 + 17},
      {4096, 1}, {size - 1, 1}, {size - 4097, 4097}};
  for (auto [offset, bytes] : writes) {
    std::vector<unsigned char> src(static_cast<std::size_t>(bytes) + 1);
    for (auto& b : src) b = static_cast<unsigned char>(gen());
    store.write(name, offset, src.data() + 1, bytes);  // +1: an unaligned source
    std::copy(src.begin() + 1, src.end(), want.begin() + offset);
    std::vector<unsigned char> back(static_cast<std::size_t>(bytes) + 3);
    store.read(name, offset, back.data() + 3, bytes);
    if (!std::equal(back.begin() + 3, back.end(), src.begin() + 1))
      return "the read after writing " + std::to_string(bytes) + " bytes at " + std::to_string(offset) + " differs";
  }
  std::fill(all, all + size, 0);
  store.read(name, 0, all, size);
  const auto diff = std::mismatch(all, all + size, want.begin());
  return diff.first == all + size ? "" : "byte " + std::to_string(diff.first - all) + " of the file differs";
}
}  // namespace

TEST(L11_NvmeStore, RoundTripsOddRangesWithDirectIoOnDisk) {
  const std::string base = disk_base();
  if (base.empty()) GTEST_SKIP() << "no disk-backed folder (/var/tmp and /tmp are tmpfs)";
  TempDir dir(base);
  const bool direct = takes_o_direct(dir.path);
  for (AioConfig aio : {AioConfig{}, AioConfig{.block_size = 8192, .intra_op_parallelism = 3}}) {
    NvmeStore store(dir.path, "run", 0, aio);
    EXPECT_EQ(store.direct(), direct) << store.why_not_direct();
    EXPECT_EQ(round_trip_problem(store, "optim.master"), "");
  }
}

TEST(L11_NvmeStore, FallsBackToBufferedIoWhereTheFilesystemRefusesODirect) {
  TempDir dir("/tmp");
  const std::string out = in_mount("mount -t ramfs ramfs " + dir.path, [&] {
    NvmeStore store(dir.path, "run", 0, {.block_size = 8192, .intra_op_parallelism = 2});
    return (store.direct() ? "direct" : "buffered: " + store.why_not_direct()) + "\n" + round_trip_problem(store, "p");
  });
  if (out.starts_with("skip:")) GTEST_SKIP() << out;
  EXPECT_TRUE(out.starts_with("buffered: the filesystem of nvme_path '" + dir.path + "' refuses direct I/O")) << out;
  EXPECT_NE(out.find("Invalid argument"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("\n")) << "the round trip: " << out;
}

TEST(L11_NvmeStore, SaysWhetherTmpfsTookDirectIo) {  // tmpfs takes O_DIRECT since Linux 6.6, refused it before
  if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  TempDir dir("/dev/shm");
  const bool direct = takes_o_direct(dir.path);
  NvmeStore store(dir.path, "run", 0);
  EXPECT_EQ(store.direct(), direct) << store.why_not_direct();
  EXPECT_EQ(store.direct(), store.why_not_direct().empty());
  EXPECT_EQ(round_trip_problem(store, "param.3"), "");
}

TEST(L11_NvmeStore, CountsTheBytesAskedAndChecksRanges) {
  TempDir dir("/tmp");
  NvmeStore store(dir.path, "run", 0);
  store.reserve("a", 10000);
  EXPECT_EQ(store.reserved("a"), 12288);  // whole 4 KiB blocks
  std::vector<char> buf(10000, 'x');
  store.write("a", 3, buf.data(), 9997);
  store.read("a", 5, buf.data(), 4000);
  store.read("a", 0, buf.data(), 1);
  const NvmeStore::Counters c = store.counters();
  EXPECT_EQ(c.bytes_written, 9997);
  EXPECT_EQ(c.bytes_read, 4001);
  EXPECT_GT(c.write_seconds, 0);
  EXPECT_GT(c.read_seconds, 0);
  EXPECT_THROW(store.read("a", 12000, buf.data(), 289), std::invalid_argument);  // past the reserved end
  EXPECT_THROW(store.write("b", 0, buf.data(), 1), std::invalid_argument);       // never reserved
  EXPECT_THROW(store.reserve("../a", 1), std::invalid_argument);
  EXPECT_THROW(NvmeStore(dir.path, "run", 1, {.block_size = 1000}), std::invalid_argument);
}

TEST(L11_NvmeStore, ReadsAndWritesFromSeveralThreadsAtOnce) {
  TempDir dir(disk_base().empty() ? "/tmp" : disk_base());
  NvmeStore store(dir.path, "run", 0, {.block_size = 8192, .intra_op_parallelism = 2});
  const std::int64_t n = 100003;  // bytes per range: ranges share a 4 KiB block with their neighbours
  for (const char* name : {"a", "b"}) store.reserve(name, 4 * n);
  std::vector<std::thread> threads;
  std::vector<std::string> problems(8);
  for (int t = 0; t < 8; ++t)  // per name: 4 threads, each its own range, writing and reading it 20 times
    threads.emplace_back([&, t] {
      const char* name = t % 2 ? "a" : "b";
      const std::int64_t offset = (t / 2) * n;
      std::vector<char> src(static_cast<std::size_t>(n)), back(src.size());
      for (int round = 0; round < 20 && problems[static_cast<std::size_t>(t)].empty(); ++round) {
        std::fill(src.begin(), src.end(), static_cast<char>(t * 31 + round));
        store.write(name, offset, src.data(), n);
        store.read(name, offset, back.data(), n);
        if (back != src)
          problems[static_cast<std::size_t>(t)] = "thread " + std::to_string(t) + " round " + std::to_string(round);
      }
    });
  for (auto& t : threads) t.join();
  for (const std::string& p : problems) EXPECT_EQ(p, "");
  for (const char* name : {"a", "b"}) {  // every range holds its last round, its neighbours' edges intact
    std::vector<char> all(static_cast<std::size_t>(4 * n));
    store.read(name, 0, all.data(), 4 * n);
    for (int t = name[0] == 'a' ? 1 : 0; t < 8; t += 2) {
      const auto first = static_cast<std::size_t>((t / 2) * n), last = first + static_cast<std::size_t>(n) - 1;
      EXPECT_EQ(all[first], static_cast<char>(t * 31 + 19)) << name << " " << t;
      EXPECT_EQ(all[last], static_cast<char>(t * 31 + 19)) << name << " " << t;
    }
  }
}

namespace {
/// A run killed mid-way: a child makes the stores of `ranks`, writes, and _exits without their destructors.
void kill_a_run(const std::string& nvme_path, const std::string& run_id, int ranks) {
  in_child([&]() -> std::string {
    for (int r = 0; r < ranks; ++r) {
      auto* store = new NvmeStore(nvme_path, run_id, r);  // never deleted: the process dies with it
      store->reserve("optim.master", 10000);
      store->write("optim.master", 0, "state", 5);
    }
    ::_exit(0);
  });
}
void plant(const std::string& path) { std::ofstream(path) << "not minitorch's"; }
}  // namespace

TEST(L11_NvmeStoreFolders, ACleanExitRemovesTheRanksFolderAndTheRunsOnceEmpty) {
  TempDir dir("/tmp");
  plant(dir.path + "/notes.txt");  // the user's: never touched
  {
    NvmeStore rank0(dir.path, "run", 0);
    std::string folder0;
    {
      NvmeStore rank1(dir.path, "run", 1);
      rank1.reserve("param.0", 5);
      folder0 = rank0.folder();
      EXPECT_EQ(rank1.folder(), dir.path + "/minitorch-swap/run/rank1");
      EXPECT_TRUE(fs::exists(rank1.folder() + "/param.0.swap"));
      EXPECT_TRUE(fs::exists(rank1.folder() + "/lock"));
    }
    EXPECT_FALSE(fs::exists(dir.path + "/minitorch-swap/run/rank1"));
    EXPECT_TRUE(fs::exists(folder0));  // rank 0 still runs
  }
  EXPECT_FALSE(fs::exists(dir.path + "/minitorch-swap"));
  EXPECT_TRUE(fs::exists(dir.path + "/notes.txt"));
}

TEST(L11_NvmeStoreFolders, AStartRemovesAKilledRunsFolderAndNamesIt) {
  TempDir dir("/tmp");
  kill_a_run(dir.path, "killed", 2);
  const std::string killed = dir.path + "/minitorch-swap/killed";
  ASSERT_TRUE(fs::exists(killed + "/rank1/optim.master.swap"));
  plant(dir.path + "/notes.txt");
  fs::create_directory(dir.path + "/other");
  plant(dir.path + "/other/file");
  NvmeStore store(dir.path, "next", 0);
  ASSERT_EQ(store.removed_leftovers().size(), 1u);
  EXPECT_EQ(store.removed_leftovers()[0].folder, killed);
  EXPECT_GE(store.removed_leftovers()[0].bytes, 2 * 12288);  // two ranks' reserved blocks
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_TRUE(fs::exists(dir.path + "/notes.txt"));  // not ours: left alone, silently
  EXPECT_TRUE(fs::exists(dir.path + "/other/file"));
  kill_a_run(dir.path, "again", 1);  // this run id and rank, killed before: a restart clears its folder
  NvmeStore again(dir.path, "again", 0);
  ASSERT_EQ(again.removed_leftovers().size(), 1u);
  EXPECT_EQ(again.removed_leftovers()[0].folder, again.folder());
  EXPECT_FALSE(fs::exists(again.folder() + "/optim.master.swap"));
}

TEST(L11_NvmeStoreFolders, AStartLeavesALiveRunAlone) {
  TempDir dir("/tmp");
  NvmeStore live(dir.path, "live", 0);  // its lock is held (flock is per open file, so one process will do)
  live.reserve("a", 4);
  NvmeStore other(dir.path, "other", 0);
  EXPECT_TRUE(other.removed_leftovers().empty());
  EXPECT_TRUE(fs::exists(live.folder() + "/a.swap"));
  live.write("a", 0, "abcd", 4);
  try {
    NvmeStore clash(dir.path, "live", 0);
    ADD_FAILURE() << "a second store of the same run id and rank started";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'" + live.folder() + "' is in use by a live process"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::exists(live.folder() + "/a.swap"));
}

TEST(L11_NvmeStoreFolders, AForeignFileInAKilledRunsFolderIsRefusedAndKept) {
  TempDir dir("/tmp");
  kill_a_run(dir.path, "killed", 1);
  const std::string killed = dir.path + "/minitorch-swap/killed";
  for (const std::string& foreign : {killed + "/rank0/notes.txt", killed + "/extra", dir.path + "/minitorch-swap/x"}) {
    plant(foreign);
    const std::string error = error_of([&] { NvmeStore store(dir.path, "next", 0); });
    EXPECT_NE(error.find("'" + foreign + "' was not written by minitorch"), std::string::npos) << error;
    EXPECT_TRUE(fs::exists(foreign));
    EXPECT_TRUE(fs::exists(killed + "/rank0/optim.master.swap"));  // a refusal removes nothing
    EXPECT_FALSE(fs::exists(dir.path + "/minitorch-swap/next"));   // nor makes its own
    fs::remove(foreign);
  }
  NvmeStore store(dir.path, "next", 0);  // the foreign files gone: the leftover goes too
  EXPECT_EQ(store.removed_leftovers().size(), 1u);
}

TEST(L11_NvmeStoreFolders, AMissingOrUnwritableNvmePathIsOneErrorNamingIt) {
  TempDir dir("/tmp");
  plant(dir.path + "/file");
  for (const std::string& bad : {dir.path + "/missing", dir.path + "/file/sub", dir.path + "/file"}) {
    const std::string error = error_of([&] { NvmeStore store(bad, "run", 0); });
    EXPECT_EQ(error, "nvme_path '" + bad +
                         "' does not exist or is not a folder: create it (a folder on the NVMe disk), or fix the path");
  }
  // Unwritable: chmod 0500 stops a user; root writes through it, not through a read-only mount.
  const std::string ro = dir.path + "/ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  const bool root = ::geteuid() == 0;
  const std::string out = root ? in_mount("mount -t tmpfs -o ro,size=64k tmpfs " + ro,
                                          [&] { return error_of([&] { NvmeStore store(ro, "run", 0); }); })
                               : error_of([&] { NvmeStore store(ro, "run", 0); });
  if (out.starts_with("skip:")) GTEST_SKIP() << out;
  EXPECT_EQ(out, "nvme_path '" + ro + "' is not writable: creating '" + ro + "/minitorch-swap' failed (" +
                     (root ? "Read-only file system" : "Permission denied") +
                     "); make it writable for this user, or point nvme_path at a writable folder");
  fs::permissions(ro, fs::perms::owner_all);
}

namespace {
/// On a disk of its own (mounted by `mount` at `nvme_path`): a reserve() that fits, one that does not (its
/// error), and a write after it; the error's message, with what was wrong after it.
std::string fill_the_disk(const std::string& nvme_path, const std::string& mount, std::int64_t too_much) {
  return in_mount(mount, [&] {
    NvmeStore store(nvme_path, "run", 0);
    store.reserve("small", 65536);
    std::string error = error_of([&] { store.reserve("big", too_much); });
    if (store.reserved("big") != 0 || fs::file_size(store.folder() + "/big.swap") != 0)
      error += " (but big.swap kept " + std::to_string(fs::file_size(store.folder() + "/big.swap")) + " bytes)";
    store.write("small", 1, "still works", 11);
    return error;
  });
}
}  // namespace

TEST(L11_NvmeStoreFolders, AFullDiskIsOneErrorNamingThePathAndTheBytes) {
  TempDir dir("/tmp");
  const std::string disk = dir.path + "/disk", image = dir.path + "/ext4.img";
  fs::create_directory(disk);
  // tmpfs undoes a failed fallocate itself; ext4 keeps what it allocated, and the store gives it back.
  const std::pair<std::string, std::string> mounts[] = {
      {"tmpfs", "mount -t tmpfs -o size=256k tmpfs " + disk},
      {"ext4", "truncate -s 8M " + image + " && mkfs.ext4 -q -F " + image + " && mount -o loop " + image + " " + disk}};
  std::vector<std::string> skipped;
  for (const auto& [type, mount] : mounts) {
    const std::string out = fill_the_disk(disk, mount, 64 << 20);
    if (out.starts_with("skip:")) {
      skipped.push_back("the full " + type + " disk (" + out + ")");
      continue;
    }
    std::cout << type << ": " << out << "\n";
    const std::string path = disk + "/minitorch-swap/run/rank0/big.swap";
    EXPECT_TRUE(out.starts_with("NVMe swap: no room on the disk of '" + path +
                                "' (No space left on device): it needs " + std::to_string(64 << 20) +
                                " bytes more and "))
        << type << ": " << out;
    EXPECT_TRUE(out.ends_with(" bytes are free; free space there, or point nvme_path at a larger disk"))
        << type << ": " << out;
  }
  // Root (mount namespaces) and, for ext4, mkfs.ext4 and a loop device: a part that cannot run is said.
  if (skipped.size() == std::size(mounts)) GTEST_SKIP() << skipped[0] << "; " << skipped[1];
  for (const std::string& why : skipped) std::cout << "not run: " << why << "\n";
}
