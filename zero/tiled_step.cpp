#include "zero/tiled_step.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "minitorch/allocator.h"
#include "minitorch/ops.h"

namespace minitorch::zero {

namespace {

/// A run of one parameter inside a tile: elements [begin, begin + length) of parameter `index` of
/// group `group`, stored at `offset` in the tile's buffer.
struct Segment {
  std::size_t group = 0, index = 0;
  std::int64_t begin = 0, length = 0, offset = 0;
};

/// The tiles over every parameter with a gradient, in group and parameter order; each at most
/// `tile_elements` elements.
std::vector<std::vector<Segment>> plan_tiles(const optim::AdamW& adamw, std::int64_t tile_elements) {
  if (tile_elements < 0) throw std::invalid_argument("tiled step: tile_elements must be >= 0, got " + std::to_string(tile_elements));
  // 0 is DeepSpeed's sub_group_size 0: a sub-group closes once it reaches the size, so each tensor is one.
  const bool per_tensor = tile_elements == 0;
  if (per_tensor) tile_elements = std::numeric_limits<std::int64_t>::max();
  std::vector<std::vector<Segment>> tiles(1);
  std::int64_t filled = 0;
  const auto& groups = adamw.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t i = 0; i < groups[g].params.size(); ++i) {
      const Tensor& p = groups[g].params[i].second;
      if (!p.grad().defined()) continue;
      for (std::int64_t at = 0; at < p.numel();) {
        if (filled == tile_elements) {  // this tile is full: open the next
          tiles.emplace_back();
          filled = 0;
        }
        const std::int64_t len = std::min(p.numel() - at, tile_elements - filled);
        tiles.back().push_back({g, i, at, len, filled});
        at += len;
        filled += len;
      }
      if (per_tensor && filled > 0) filled = tile_elements;  // the next tensor opens a tile
    }
  if (tiles.back().empty()) tiles.pop_back();
  return tiles;
}

std::int64_t tile_size(const std::vector<Segment>& tile) { return tile.back().offset + tile.back().length; }

/// The tile's gradients in one new f32 buffer (tile_size) under MemTag::optim_temp, × multiplier.
Tensor widened_gradients(const optim::AdamW& adamw, const std::vector<Segment>& tile, float multiplier) {
  Tensor buf;
  {
    TagScope scope(MemTag::optim_temp);  // beside the gradients it widens: the device pool on a sim rank
    const Segment& first = tile.front();
    buf = Tensor::empty({tile_size(tile)}, DType::f32,
                        adamw.param_groups()[first.group].params[first.index].second.grad().device());
  }
  for (const Segment& s : tile) {
    const Tensor grad = adamw.param_groups()[s.group].params[s.index].second.grad();
    const Tensor flat = grad.is_contiguous() ? grad.view({grad.numel()}) : grad.reshape({grad.numel()});
    buf.narrow(0, s.offset, s.length).copy_(flat.narrow(0, s.begin, s.length));  // widens exactly
  }
  if (multiplier != 1.f) ops::scale_(buf, multiplier);
  return buf;
}

}  // namespace

double tiled_sum_squares(const optim::AdamW& adamw, std::int64_t tile_elements, const std::vector<std::string>& excluded) {
  double total = 0;
  const auto& groups = adamw.param_groups();
  auto counted = [&](const Segment& s) {
    const std::string& name = groups[s.group].params[s.index].first;
    return std::find(excluded.begin(), excluded.end(), name.substr(0, name.find('['))) == excluded.end();
  };
  for (const auto& tile : plan_tiles(adamw, tile_elements)) {
    const Tensor buf = widened_gradients(adamw, tile, 1.f);
    if (excluded.empty()) {
      total += ops::sum_squares(buf);
      continue;
    }
    for (const Segment& s : tile)
      if (counted(s)) total += ops::sum_squares(buf.narrow(0, s.offset, s.length));
  }
  return total;
}

void tiled_adamw_step(optim::AdamW& adamw, float grad_multiplier, std::int64_t tile_elements) {
  adamw.begin_step();
  for (const auto& tile : plan_tiles(adamw, tile_elements)) {
    const Tensor buf = widened_gradients(adamw, tile, grad_multiplier);  // freed at the end of the tile
    for (const Segment& s : tile) {
      const auto& [name, param] = adamw.param_groups()[s.group].params[s.index];
      adamw.update(s.group, name, param, s.begin, buf.narrow(0, s.offset, s.length));
    }
  }
}

}  // namespace minitorch::zero
