// How the GPT's blocks are split into pipeline stages (partition.h).
#include "pipeline/partition.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "minitorch/not_implemented.h"
#include "nn/gpt.h"
#include "nn/parameter_names.h"

namespace minitorch::pipeline {

std::vector<std::int64_t> layer_parameters(const nn::GPTConfig& config) {
  const std::int64_t L = config.n_layer;
  std::vector<std::int64_t> out(static_cast<std::size_t>(L + 2), 0);
  for (const auto& [name, shape] : nn::GPT::parameter_shapes(config)) {
    const std::int64_t n = shape_numel(shape);
    const nn::ParameterPlace place = nn::parameter_place(name);
    if (place.part == nn::ModelPart::block) {
      out[static_cast<std::size_t>(place.block + 1)] += n;
    } else if (place.part == nn::ModelPart::embeddings) {  // wte, wpe
      out.front() += n;
      if (nn::is_tied_embedding(name)) out.back() += n;  // the head's tied copy on the last stage
    } else {  // ln_f (the head's weight is wte's)
      out.back() += n;
    }
  }
  return out;
}

std::vector<StagePlan> partition_gpt(const nn::GPTConfig& config, int P, const std::string& method) {
  const int L = static_cast<int>(config.n_layer);
  if (P < 1 || P > L)
    throw std::invalid_argument("pipeline: " + std::to_string(P) + " stages for a GPT of " + std::to_string(L) +
                                " blocks (model.n_layer): every stage needs at least one block, so 1 to " +
                                std::to_string(L) + " stages");
  if (method != "uniform" && method != "parameters")
    throw std::invalid_argument("pipeline: partition_method '" + method + "': expected \"uniform\" or \"parameters\"");
  const std::vector<std::int64_t> w = layer_parameters(config);
  // cut[s] = first block of stage s; cut[P] = L.
  std::vector<int> cut(P + 1, L);
  if (method == "uniform") {
    for (int s = 0, b = 0; s < P; ++s) {
      cut[s] = b;
      b += L / P + (s < L % P ? 1 : 0);
    }
  } else {
    // BEGIN SOLUTION L09.2
    // best[s][b]: the smallest possible largest stage when blocks [0, b) form stages 0..s-1 (DP over cuts).
    const std::int64_t inf = std::numeric_limits<std::int64_t>::max();
    auto weight = [&](int first, int end, int s) {  // blocks [first, end) as stage s
      std::int64_t n = 0;
      for (int b = first; b < end; ++b) n += w[static_cast<std::size_t>(b + 1)];
      if (s == 0) n += w.front();
      if (s == P - 1) n += w.back();
      return n;
    };
    std::vector<std::vector<std::int64_t>> best(P + 1, std::vector<std::int64_t>(L + 1, inf));
    std::vector<std::vector<int>> from(P + 1, std::vector<int>(L + 1, -1));
    best[0][0] = 0;
    for (int s = 1; s <= P; ++s)
      for (int end = s; end <= L - (P - s); ++end)
        for (int first = s - 1; first < end; ++first) {
          if (best[s - 1][first] == inf) continue;
          const std::int64_t v = std::max(best[s - 1][first], weight(first, end, s - 1));
          if (v < best[s][end]) best[s][end] = v, from[s][end] = first;
        }
    for (int s = P, end = L; s > 0; --s) {
      cut[s] = end;
      end = from[s][end];
      cut[s - 1] = end;
    }
    // END SOLUTION
  }
  std::vector<StagePlan> plan(P);
  for (int s = 0; s < P; ++s) {
    StagePlan& p = plan[s];
    p.first_block = cut[s];
    p.end_block = cut[s + 1];
    p.embeddings = s == 0;
    p.head = s == P - 1;
    for (int b = p.first_block; b < p.end_block; ++b) p.parameters += w[static_cast<std::size_t>(b + 1)];
    if (p.embeddings) p.parameters += w.front();
    if (p.head) p.parameters += w.back();
  }
  return plan;
}

}  // namespace minitorch::pipeline
