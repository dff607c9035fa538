#include "minitorch/flat_buffer.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace minitorch {

FlatBuffer::FlatBuffer(const std::vector<Shape>& shapes, DType dtype, int align, MemTag tag, Device device,
                       std::int64_t numel)
    : shapes_(shapes), align_(align), dtype_(dtype) {
  if (align < 1) throw std::invalid_argument("FlatBuffer: align must be at least 1, got " + std::to_string(align));
  for (const Shape& s : shapes) {
    offsets_.push_back(used_);
    numels_.push_back(shape_numel(s));
    used_ += numels_.back();
  }
  numel_ = (used_ + align - 1) / align * align;
  if (numel > 0) {
    if (numel < used_ || numel % align != 0)
      throw std::invalid_argument("FlatBuffer: " + std::to_string(numel) + " elements cannot hold " +
                                  std::to_string(used_) + " in shards of " + std::to_string(align) +
                                  " (at least the slots, a multiple of align)");
    numel_ = numel;
  }
  TagScope scope(tag);
  flat_ = Tensor::zeros({numel_}, dtype, device);  // padding starts (and stays) zero
}

Tensor FlatBuffer::view(std::size_t i) const {
  if (i >= offsets_.size())
    throw std::out_of_range("FlatBuffer::view: slot " + std::to_string(i) + " of " + std::to_string(size()));
  return flat_.narrow(0, offsets_[i], numels_[i]).view(shapes_[i]);
}

FlatBuffer::Range FlatBuffer::shard(int rank, int world) const {
  if (world < 1 || rank < 0 || rank >= world || numel_ % world != 0)
    throw std::invalid_argument("FlatBuffer::shard: rank " + std::to_string(rank) + " of " + std::to_string(world) +
                                " ranks, but numel " + std::to_string(numel_) + " must split evenly (align = world)");
  const std::int64_t per = numel_ / world;
  return {rank * per, (rank + 1) * per};
}

Tensor FlatBuffer::shard_view(int rank) const {
  Range r = shard(rank);
  return flat_.narrow(0, r.begin, r.size());
}

FlatBuffer::Range FlatBuffer::overlap(std::size_t i, int rank) const {
  Range s = slot(i), sh = shard(rank);
  Range r{std::max(s.begin, sh.begin), std::min(s.end, sh.end)};
  if (r.empty()) return {r.begin, r.begin};
  return r;
}

}  // namespace minitorch
