#pragma once
/// \file nvme_optimizer.h
/// ZeRO-Infinity's optimizer on NVMe (`offload_optimizer.device: "nvme"`, stage 3; docs/design.md §10): the
/// f32 master, m and v of this rank's shard live in three files of its swap space (zero/nvme_store.h), 4 bytes
/// per owned element each, and the step walks the shard in tiles of `sub_group_size` elements, the pieces end
/// to end in optimizer order (a tile may hold the end of one piece and the start of the next):
///
///   read     the tile's master, m, v from disk into a host state buffer     disk_read  12 B per element
///   down     its gradient, device → host, widened to f32 × the multiplier   d2h         G B per element
///   update   AdamW on the host (minitorch/host_adamw.h), in one pass
///   up       the updated values into the parameters (rounded to P in 16-bit training): device h2d, P B per
///            element; a shard that lives on the host (offload_param "cpu") is written in place, one on disk
///            (offload_param "nvme") into its file (disk_write P B per element)
///   write    master, m, v back to disk                                       disk_write 12 B per element
///
/// So the host holds tiles, never the shard: a 12-byte-per-element state buffer per tile in flight, and one
/// tile's gradient (4 bytes per element; 16-bit training adds G for the copy down and P for the rounded copy
/// up). With `pipeline_read` the next tile's read runs on a reader thread, with `pipeline_write` the last
/// tile's write on a writer thread, while this tile updates (one more state buffer each):
///
/// \verbatim
///   main    | down 0  update 0  up 0 | down 1  update 1  up 1 | down 2  update 2  up 2 |
///   reader  | read 1 ............... | read 2 ............... |
///   writer  |                        | write 0 .............. | write 1 .............. | write 2
/// \endverbatim
///
/// Host bytes of the step (tag optim: the state buffers; optim_temp: the rest), t = min(tile, shard):
///   slots · 12t + 4t  (+ (G + P)·t in 16-bit training),  slots = 1 + pipeline_read + pipeline_write
/// (host_step_bytes()); the swap's O_DIRECT bounce buffers, aio.block_size per I/O thread, come on top, outside
/// the pools. The norm reads the gradients where they are, on the device, as without offload; the AdamW this
/// exposes (lr, step count, groups) is over the pieces themselves and holds no state. A checkpoint reads the
/// states back whole, under AdamW's names (exp_avg.<piece>, exp_avg_sq.<piece>, master.<piece> in 16-bit), so a
/// run with or without NVMe resumes the other.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "optim/adamw.h"
#include "zero/nvme_store.h"

namespace minitorch::zero {

class Partition;

class NvmeOptimizer {
 public:
  struct Options {
    std::int64_t tile_elements = 0;  ///< sub_group_size: elements per tile (0: one piece per tile)
    bool pipeline_read = false;      ///< the next tile's read overlaps this tile's update
    bool pipeline_write = false;     ///< the last tile's write overlaps this tile's update
  };

  /// AdamW with `options` over `groups` (this rank's pieces with their gradient shards: Partition::optimizer_groups,
  /// views that must outlive this), its states in three files of `store` ("optim.master", "optim.exp_avg",
  /// "optim.exp_avg_sq"), reserved now: a full disk fails here, before the first step. The masters are written
  /// from the pieces; m and v start as the files' zeros.
  /// A piece whose shard lives on disk (offload_param "nvme"): its file in the store and its first byte there.
  struct ParamFile {
    std::string file;
    std::int64_t offset = 0;
  };
  /// `on_disk`: the pieces (by name) whose values live in a file of `store`, not in memory: the step writes their
  /// new values there (disk_write P bytes per element) and reads them back for the masters.
  NvmeOptimizer(std::vector<optim::ParamGroup> groups, const optim::AdamWOptions& options, NvmeStore& store,
                Options tiles, const std::map<std::string, ParamFile>& on_disk = {});
  ~NvmeOptimizer();
  NvmeOptimizer(const NvmeOptimizer&) = delete;
  NvmeOptimizer& operator=(const NvmeOptimizer&) = delete;

  /// The AdamW over the pieces: its lr, step count and groups are the step's; its state stays empty.
  optim::AdamW& adamw() { return *adamw_; }
  const optim::AdamW& adamw() const { return *adamw_; }

  /// One AdamW step (begin_step, then every tile as above) with each gradient × `grad_multiplier`.
  void update(float grad_multiplier);
  /// The masters on disk from the pieces (at the start, and after the parameters are loaded).
  void refresh_masters();

  /// AdamW's state of every piece, read back from disk (none before the first update).
  nn::NamedTensors state_tensors() const;
  void load_state(const nn::NamedTensors& state, std::int64_t steps);

  /// Elements this rank owns (the pieces'), the tiles of a step, and the host bytes a step allocates.
  std::int64_t owned() const { return owned_; }
  std::size_t tiles() const { return tiles_.size(); }
  std::int64_t host_step_bytes() const;
  /// Bytes its three files hold on disk (as reserved: each rounded up to 4 KiB).
  std::int64_t disk_bytes() const;
  /// Of the last step: the seconds the main thread waited for I/O (its own reads and writes, and the reader's
  /// and writer's jobs), and the seconds of I/O the step ran: 1 − waited / io is the share the pipeline hid.
  struct StepTimes {
    double io_seconds = 0, waited_seconds = 0;
  };
  StepTimes last_step_times() const { return times_; }

  /// The frames (zero/step_frames.h): `hook(k)` is called once tile k is updated in host memory, before it is
  /// written back, staged() naming its ranges meanwhile; then, for k from tiles() to `calls` − 1, with nothing
  /// staged (every rank records the same frames: `calls` is the most tiles of any rank).
  void set_tile_hook(std::function<void(std::size_t tile)> hook, std::size_t calls) {
    tile_hook_ = std::move(hook);
    hook_calls_ = calls;
  }
  /// A range of a piece (by name, [begin, end) inside the piece) in host memory for the step.
  struct StagedRange {
    std::string piece;
    std::int64_t begin = 0, end = 0;
  };
  /// The tile being updated, inside the tile hook; empty elsewhere.
  std::vector<StagedRange> staged() const;

  /// The tiles rank `rank` of `partition` walks with `tile_elements` (0: one per piece) — every rank's count,
  /// from the layout alone (the frames pair up the ranks' tiles; a rank with fewer tiles shows none for the rest).
  static std::size_t tiles_of_rank(const Partition& partition, int rank, std::int64_t tile_elements);

 private:
  struct Piece {
    std::string name;
    Tensor param;           ///< (n) the piece on the device, or on the host under offload_param (released: on disk)
    ParamFile file;         ///< offload_param "nvme": where its values live (file empty: in `param`)
    Tensor grad;            ///< (n) its reduced gradient, on the device
    std::size_t group = 0;  ///< its AdamW group (lr, weight decay)
    std::int64_t offset = 0;  ///< where it starts in the flat owned space
  };
  /// A run of one piece inside a tile: elements [begin, begin + length) of piece `piece`, at `at` in the tile.
  struct Segment {
    std::size_t piece = 0;
    std::int64_t begin = 0, length = 0, at = 0;
  };
  struct Tile {
    std::int64_t begin = 0, end = 0;  ///< in the flat owned space
    std::vector<Segment> segments;
  };
  class IoThread;  // a thread that runs its jobs in order: the pipelined reads, or the pipelined writes

  /// State buffer `slot` as three f32 views of `length` elements: master, m, v.
  Tensor state_view(const Tensor& slot, int which, std::int64_t length) const;
  void read_tile(const Tile& t, const Tensor& slot);
  void write_tile(const Tile& t, const Tensor& slot);
  /// down, update, up of tile `t`, its state in `slot`.
  void compute_tile(const Tile& t, const Tensor& slot, float grad_multiplier, const Tensor& grad32,
                    const Tensor& grad_in, const Tensor& copy16);

  std::vector<Piece> pieces_;
  std::vector<Tile> tiles_;
  std::int64_t owned_ = 0, max_tile_ = 0;
  DType param_dtype_ = DType::f32, grad_dtype_ = DType::f32;
  Options options_;
  NvmeStore& store_;
  std::unique_ptr<optim::AdamW> adamw_;
  std::unique_ptr<IoThread> reader_, writer_;
  std::function<void(std::size_t)> tile_hook_;
  std::size_t hook_calls_ = 0;
  const Tile* staged_ = nullptr;  ///< inside the tile hook
  StepTimes times_;
};

}  // namespace minitorch::zero
