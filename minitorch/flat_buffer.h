#pragma once
/// \file flat_buffer.h
/// Many tensors laid out end to end in one contiguous buffer, padded so it splits into N equal shards.
///
/// This is the data structure under DDP's buckets and ZeRO's partitions (docs/design.md §6): a collective
/// moves one flat buffer instead of many small tensors, and "rank r owns shard r" is a range of it.
///
///   slot 0 (shape of tensor 0) | slot 1 | ... | slot k-1 | padding
///   |<------------------------- numel() = used() + padding() ------------------------->|
///   |<-- shard 0 -->|<-- shard 1 -->| ... |<-- shard N-1 -->|     each numel() / N elements
///
/// Padding: numel() is the smallest multiple of `align` (the number of ranks) ≥ used(), so padding()
/// is in [0, align); it costs padding_bytes() = padding() × dtype_size bytes per buffer. The padding
/// elements are zero and stay zero (they reduce to zero and no optimizer ever sees them): these bytes
/// are the "padding to a multiple of N" that docs/design.md §8 allows on top of the model-state formulas.
///
/// \code
///   Tensor a = Tensor::zeros({3, 2}), b = Tensor::zeros({5});        // 11 elements
///   FlatBuffer flat({a.shape(), b.shape()}, DType::f32, /*align=*/4, MemTag::comm);
///   flat.numel();        // 12: 11 used + 1 padding
///   flat.view(1);        // (5) view of elements [6, 11)
///   flat.shard(2);       // {6, 9}: rank 2 of 4 owns elements [6, 9)
///   flat.overlap(1, 2);  // {6, 9}: the part of slot 1 that lies in shard 2
/// \endcode
#include <cstdint>
#include <vector>

#include "minitorch/allocator.h"
#include "minitorch/tensor.h"

namespace minitorch {

class FlatBuffer {
 public:
  /// A half-open range of flat elements [begin, end).
  struct Range {
    std::int64_t begin = 0, end = 0;
    std::int64_t size() const { return end - begin; }
    bool empty() const { return end <= begin; }
    bool operator==(const Range&) const = default;
  };

  FlatBuffer() = default;
  /// Lays out one slot per shape in order, pads to a multiple of `align` (≥ 1), and allocates the
  /// zeroed buffer under `tag` on `device`. `numel` > 0: exactly that many elements (a Gemini chunk's fixed
  /// size: at least the slots, a multiple of `align`; std::invalid_argument otherwise).
  FlatBuffer(const std::vector<Shape>& shapes, DType dtype, int align, MemTag tag, Device device = Device::cpu(),
             std::int64_t numel = 0);

  std::size_t size() const { return offsets_.size(); }       ///< number of slots
  std::int64_t numel() const { return numel_; }               ///< used + padding
  std::int64_t used() const { return used_; }                 ///< Σ numel of the slots
  std::int64_t padding() const { return numel_ - used_; }
  std::int64_t padding_bytes() const { return padding() * static_cast<std::int64_t>(dtype_size(dtype_)); }
  int align() const { return align_; }
  DType dtype() const { return dtype_; }

  /// The whole buffer: (numel()) contiguous.
  const Tensor& flat() const { return flat_; }
  /// Slot i as a view with its tensor's shape (shares the buffer's storage).
  Tensor view(std::size_t i) const;
  /// Slot i's elements in the flat numbering.
  Range slot(std::size_t i) const { return {offsets_[i], offsets_[i] + numels_[i]}; }
  /// Rank r's shard of `world` equal shards (world must divide numel(): pass align = world).
  Range shard(int rank, int world) const;
  /// Shard `rank` of the align() shards.
  Range shard(int rank) const { return shard(rank, align_); }
  /// (shard size) view of rank r's shard.
  Tensor shard_view(int rank) const;
  /// The part of slot i inside shard r (empty if they do not meet), in flat numbering.
  Range overlap(std::size_t i, int rank) const;

 private:
  std::vector<std::int64_t> offsets_, numels_;
  std::vector<Shape> shapes_;
  std::int64_t used_ = 0, numel_ = 0;
  int align_ = 1;
  DType dtype_ = DType::f32;
  Tensor flat_;
};

}  // namespace minitorch
