#pragma once
/// \file partition.h
/// What the ZeRO stages share (docs/design.md §6): the model's parameters laid out in **buckets**, each
/// bucket one flat buffer split into N equal shards, and rank r owning shard r of every bucket.
///
///   bucket 0 (the last layers)          bucket 1                      ...
///   | shard 0 | shard 1 | ... | N-1 |   | shard 0 | shard 1 | ... |
///     rank 0    rank 1                    rank 0    rank 1
///
/// This is FSDP's layout (each bucket reduce-scattered on its own), not DeepSpeed's (contiguous shards
/// of the whole flat space, each bucket's slices reduced to their owners): both move the same bytes,
/// and this one lets every collective be one reduce-scatter or all-gather of one flat buffer.
/// Buckets hold whole parameters, in reverse order of use (the order backward finishes them), of at
/// most `bucket_elements` elements (a bigger parameter gets a bucket of its own), as DDP's do.
///
/// A shard cuts through parameters. The optimizer sees this rank's **pieces**: the part of each
/// parameter inside this rank's shards, as 1-D views of the flat buffers, named "<param>[a:b]" (a, b:
/// element offsets inside the flattened parameter).
///
/// \code
///   zero::Partition part(model.named_parameters(), /*bucket_elements=*/3000, world.rank(), world.size());
///   part.adopt_parameters();   // each parameter's storage is now a slot of its bucket's `params` buffer
///   for (auto& piece : part.pieces()) ...   // piece.param_view: (b - a) view into params.flat()
/// \endcode
#include <cstdint>
#include <string>
#include <vector>

#include "minitorch/flat_buffer.h"
#include "nn/module.h"
#include "optim/optimizer.h"

namespace minitorch::zero {

/// Where a stage-3 shard of parameters lives between its gathers: on the device, in host memory
/// (offload_param "cpu") or in a file of the rank's swap space (offload_param "nvme").
enum class ShardHome { device, host, disk };

/// The swap file (zero/nvme_store.h) of bucket `bucket`'s parameter shard when its home is disk.
inline std::string shard_swap_file(std::size_t bucket) { return "param." + std::to_string(bucket); }

/// One bucket of parameters, reduced and gathered together.
struct ShardedBucket {
  std::vector<std::size_t> members;  ///< indices into the model's named_parameters(), slot order
  std::int64_t numel = 0;            ///< Σ numel of the members + padding: a multiple of N
  std::int64_t first = 0;            ///< where it starts in the flat space of all buckets end to end (traces)
  FlatBuffer params;                 ///< the parameters' own storage: dtype P, tag param, N shards
                                     ///< (stages 1-2: adopt_parameters; stage 3: only while gathered)
  Tensor param_shard;                ///< (numel / N) this rank's shard of the parameters: a view of
                                     ///< `params` (stages 1-2) or its own buffer (stage 3)
  ShardHome home = ShardHome::device;  ///< stage 3 with offload_param: host memory, or disk (`param_shard` is
                                       ///< then released: its shape only; the values are in the swap file)
  FlatBuffer grads;                  ///< stage 1: the full gradients' storage (adopt_gradients): dtype G, tag grad
  Tensor grad_shard;                 ///< (numel / N) this rank's reduced gradient: the shard of `grads`
                                     ///< (stage 1) or its own buffer (stage 2, allocate_gradient_shards)
  std::int64_t shard_begin(int rank, int world) const { return rank * (numel / world); }
};

/// The part of one parameter inside this rank's shard of one bucket.
struct ShardPiece {
  std::string name;            ///< "<param>[a:b]"
  std::size_t param = 0;       ///< index into named_parameters()
  std::size_t bucket = 0;      ///< index into buckets()
  FlatBuffer::Range range;     ///< in the bucket's flat numbering
  std::int64_t param_offset;   ///< a: where the piece starts inside the flattened parameter
  bool decay = false;          ///< the parameter has dim >= 2 (nanoGPT's weight-decay group)
};

class Partition {
 public:
  /// Plans the buckets and this rank's pieces; allocates nothing yet.
  Partition(const nn::NamedTensors& params, std::int64_t bucket_elements, int rank, int world);
  /// The same with the buckets given: each a list of indices into `params` (ZeRO-3's units). `sizes`, if given:
  /// each bucket's elements, padding included (Gemini's chunks: at least its parameters, a multiple of `world`).
  Partition(const nn::NamedTensors& params, const std::vector<std::vector<std::size_t>>& buckets, int rank, int world,
            const std::vector<std::int64_t>& sizes = {});

  /// Allocates each bucket's `params` buffer, copies the parameters in and makes each parameter a
  /// view of its slot (Tensor::set_data): the old storage is freed, and a gather into the buffer
  /// writes the parameters themselves. Bytes: P × (Ψ + padding).
  void adopt_parameters();
  void adopt_parameters(std::size_t bucket);  ///< the same for one bucket
  /// Stage 3: allocates this rank's parameter shards (P × (Ψ + padding) / N bytes, tag param), copies
  /// its part of every parameter in, and releases the parameters' own data (Tensor::release_data).
  void shard_parameters();
  /// The same for one bucket; `on_host` (offload_param): the shard is allocated in host memory instead (home
  /// ShardHome::host; a caller that moves it to disk sets home and releases it).
  void shard_parameters(std::size_t bucket, bool on_host = false);
  /// Stage 3: points bucket b's parameters into its gathered `params` buffer.
  void attach_gathered(std::size_t bucket);
  /// Stage 3: releases bucket b's parameters and frees its gathered buffer (the shard stays).
  void release_gathered(std::size_t bucket);
  /// Allocates each bucket's `grads` buffer (zeros) and makes it every parameter's .grad, so backward
  /// accumulates into it in place. Bytes: G × (Ψ + padding). Called again, it re-attaches any .grad
  /// that was reset to undefined (zeroing that slot), and leaves attached ones alone.
  void adopt_gradients();
  /// Stage 2: allocates this rank's reduced-gradient shards, G × (Ψ + padding) / N bytes under tag
  /// grad: one buffer for every bucket's shard (`contiguous`, DeepSpeed's contiguous_gradients) or
  /// one per bucket. The full gradients then only pass through (backward makes them, the reduction
  /// reads and frees them).
  void allocate_gradient_shards(bool contiguous);
  /// Sets the gradient buffers to zero (the step's end: they stay attached).
  void zero_gradients();

  const std::vector<ShardedBucket>& buckets() const { return buckets_; }
  std::vector<ShardedBucket>& buckets() { return buckets_; }
  const std::vector<ShardPiece>& pieces() const { return pieces_; }
  const nn::NamedTensors& params() const { return params_; }
  /// The device the parameters compute on (a gathered buffer is made there, whichever memory holds the shard).
  Device device() const { return params_.front().second.device(); }
  int rank() const { return rank_; }
  int world() const { return world_; }
  /// Σ numel of the parameters (Ψ), and of the padding added to make each bucket divide by N.
  std::int64_t numel() const { return numel_; }
  std::int64_t padding() const { return padding_; }

  /// Bucket b's parameters' shapes, slot order (the layout of its flat buffers).
  std::vector<Shape> shapes(const ShardedBucket& b) const;
  /// Where `piece` starts inside this rank's shard of its bucket (elements).
  std::int64_t offset_in_shard(const ShardPiece& piece) const {
    return piece.range.begin - buckets_[piece.bucket].shard_begin(rank_, world_);
  }
  /// (b - a) 1-D views of this rank's pieces, into the buckets' `param_shard` (every bucket's, in order).
  nn::NamedTensors piece_params() const;
  /// The optimizer's groups over piece_params(), with each piece's .grad set to its view of the
  /// buckets' `grad_shard`: "decay" (pieces of dim >= 2 parameters) and "no_decay", as decay_groups() does
  /// for whole parameters.
  std::vector<optim::ParamGroup> optimizer_groups(float lr, float weight_decay) const;

 private:
  nn::NamedTensors params_;
  std::vector<ShardedBucket> buckets_;
  std::vector<ShardPiece> pieces_;
  int rank_ = 0, world_ = 1;
  std::int64_t numel_ = 0, padding_ = 0;
};

}  // namespace minitorch::zero
