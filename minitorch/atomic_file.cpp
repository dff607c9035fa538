#include "minitorch/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace minitorch {

namespace {
/// Removes the temp file unless the write got all the way to the rename.
struct TempFileGuard {
  std::string path;
  int fd = -1;
  bool committed = false;
  ~TempFileGuard() {
    if (fd >= 0) ::close(fd);
    if (!committed) std::remove(path.c_str());
  }
};
}  // namespace

void write_file_atomic(const std::string& path, const ByteSpans& parts, const std::string& what) {
  auto fail = [&](const std::string& reason) { throw std::runtime_error(what + " '" + path + "': " + reason); };
  TempFileGuard tmp{path + ".tmp." + std::to_string(::getpid())};
  tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tmp.fd < 0) fail("cannot create '" + tmp.path + "': " + std::strerror(errno));
  for (auto [data, n] : parts) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(tmp.fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail(std::string("write failed: ") + std::strerror(errno));
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }
  // The data must be on disk before the rename makes it visible under the real name.
  if (::fsync(tmp.fd) != 0) fail(std::string("fsync failed: ") + std::strerror(errno));
  int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0) fail(std::string("close failed: ") + std::strerror(errno));
  if (std::rename(tmp.path.c_str(), path.c_str()) != 0)
    fail("cannot rename '" + tmp.path + "' into place: " + std::strerror(errno));
  tmp.committed = true;
  // Best effort: persist the directory entry too (not all filesystems allow fsync on a directory).
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace minitorch
