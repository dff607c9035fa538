#include "runtime/run_id.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>

namespace minitorch::runtime {

std::string new_run_id() {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
  std::random_device rd;  // two runs started in the same second by the same pid number still differ
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return std::to_string(secs) + "-" + std::to_string(::getpid()) + "-" + buf;
}

std::string new_run_id(dist::ProcessGroup& group) {
  std::string id = group.rank() == 0 ? new_run_id() : std::string();
  Tensor chars = Tensor::zeros({64}, DType::i32);  // an id is < 64 characters: digits, '-', hex
  auto* c = chars.data<std::int32_t>();
  for (std::size_t i = 0; i < id.size() && i < 63; ++i) c[i] = static_cast<unsigned char>(id[i]);
  group.broadcast(chars, 0);
  id.clear();
  for (std::int64_t i = 0; i < 64 && c[i] != 0; ++i) id.push_back(static_cast<char>(c[i]));
  return id;
}

}  // namespace minitorch::runtime
