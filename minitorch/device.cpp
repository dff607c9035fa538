#include "minitorch/device.h"

#include <stdexcept>

namespace minitorch {

Device Device::parse(const std::string& text) {
  if (text == "cpu") return cpu();
  if (text == "sim") return sim();
  if (text == "cuda") return cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    std::size_t used = 0;
    int index = -1;
    try {
      index = std::stoi(text.substr(5), &used);
    } catch (const std::exception&) {
    }
    if (index >= 0 && used == text.size() - 5) return cuda(index);
  }
  throw std::invalid_argument("unknown device '" + text + "' (valid: cpu, sim, cuda, cuda:N)");
}

std::string Device::str() const { return is_cpu() ? "cpu" : is_sim() ? "sim" : "cuda:" + std::to_string(index); }

}  // namespace minitorch
