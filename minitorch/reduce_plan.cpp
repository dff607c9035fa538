#include "minitorch/reduce_plan.h"

#include <algorithm>

namespace minitorch {

ReducePlan plan_sum(const Shape& shape, const std::vector<std::int64_t>& dims, bool keepdim) {
  ReducePlan plan;
  std::vector<std::pair<std::int64_t, bool>> groups;  // (size, reduced)
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(shape.size()); ++d) {
    const bool red = std::find(dims.begin(), dims.end(), d) != dims.end();
    const std::int64_t n = shape[static_cast<std::size_t>(d)];
    if (!red || keepdim) plan.out_shape.push_back(red ? 1 : n);
    if (n == 1) continue;
    if (!groups.empty() && groups.back().second == red)
      groups.back().first *= n;
    else
      groups.emplace_back(n, red);
  }
  for (;;) {  // the last reduced group first: (O, R, I) -> (O, I)
    auto it = std::find_if(groups.rbegin(), groups.rend(), [](const auto& g) { return g.second; });
    if (it == groups.rend()) break;
    const std::size_t g = static_cast<std::size_t>(groups.rend() - it) - 1;
    ReducePlan::Step step{1, groups[g].first, 1};
    for (std::size_t i = 0; i < g; ++i) step.outer *= groups[i].first;
    for (std::size_t i = g + 1; i < groups.size(); ++i) step.inner *= groups[i].first;
    plan.steps.push_back(step);
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(g));
  }
  return plan;
}

}  // namespace minitorch
