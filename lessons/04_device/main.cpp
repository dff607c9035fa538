// Lesson 04: the device. build/bin/lesson-04 [--auto] [--quick] [--beat N] [--data TEXT] [--steps N] [--rows N]
// [--cols N] [--reps N] (make lesson-04)
// What a student meets before DDP: a device with memory of its own and the copies to and from it, the caching
// allocator that keeps that memory, one kernel made fast (the row softmax: naive, lanes and a halving tree,
// wide loads), the op table that proves a backend, and the GPT trained on the device with the CPU's losses.
// It runs everywhere on `sim` (the simulated accelerator) and the CPU; where a GPU is usable, its beats add it.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "allocator_beat.h"
#include "common/beat.h"
#include "copy_ledger.h"
#include "data/batch_sampler.h"
#include "data/text_dataset.h"
#include "gpt_on_device.h"
#include "host_and_device.h"
#include "kernel_beat.h"
#include "minitorch/allocator.h"
#include "op_table_beat.h"

using namespace minitorch;

namespace {
struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 20;    // beat 6
  long long rows = 4096;   // beats 3 and 4: the softmax's (rows, cols)
  long long cols = 1024;
  long long reps = 9;      // timed runs per kernel (the median is printed)
};

// What the beats hand on: the text and the baby GPT's config and batches.
struct State {
  std::optional<data::TextDataset> ds;
  std::int64_t V = 0;
  runtime::Config cfg;
  std::optional<data::BatchSampler> sampler;
};
}  // namespace

void the_device_and_the_host(lesson::Beats& beats, State& s) {
  beats.beat("the device and the host: memory of its own, and every copy between them counted",
             "A GPU computes on its own memory. `sim` stands in for one: its bytes are host memory and the CPU's\n"
             "kernels run on them, but the allocator keeps them in a pool of their own and every copy between it\n"
             "and the host is counted, like a PCIe transfer. Tensor::to(device) is the only way across.");
  lesson04::copies_between_host_and_device();
  lesson04::a_forgotten_copy();
  lesson04::a_training_steps_copies(s.cfg, s.V, *s.sampler);
}

void the_caching_allocator(lesson::Beats& beats, State& s) {
  beats.beat("the caching allocator: size classes, splitting, reuse without a system call",
             "cudaMalloc is slow and synchronises the device, so PyTorch asks for big segments and keeps them:\n"
             "a request is rounded to 512 B, served from the best-fitting free block (split if much bigger),\n"
             "and a freed block goes back to the cache, not to the device. Here that allocator is a small class\n"
             "(caching_allocator.h), replayed on every allocation the baby GPT makes on sim, recorded from the pool.");
  lesson04::replay_gpt_steps_on_caching_allocator(s.cfg, s.V, *s.sampler);
}

void the_halving_tree(lesson::Beats& beats, const Options& opt) {
  beats.beat("one kernel from naive to fast, 1: the row softmax and the warp's halving tree",
             "A row's softmax needs two reductions, its max and its sum of exp. cuda/softmax.cu gives a row to one\n"
             "warp: 32 lanes each take every 32nd element, then combine their partials in log2(32) = 5 halvings\n"
             "(__shfl_xor_sync: lane i takes lane i^offset's value), all in registers. A CPU core's SIMD register\n"
             "is such a warp: its lanes reduced by the same tree (task L04.1).");
  lesson04::show_halving_tree(opt.cols);
}

void naive_to_fast(lesson::Beats& beats, const Options& opt) {
  beats.beat("one kernel from naive to fast, 2: three versions, timed against the memory-bound limit",
             "naive: one row per thread, scalar loops. lanes: a SIMD register per row and the halving tree.\n"
             "wide: four registers per step (independent chains) and exp computed once. Softmax does a few\n"
             "operations per byte it moves, so no version can beat bytes moved / the machine's bandwidth.");
  lesson04::naive_to_fast(opt.rows, opt.cols, static_cast<int>(opt.reps));
}

void the_op_table(lesson::Beats& beats) {
  beats.beat("the op table: how a new backend is proven",
             "Every kernel of minitorch/backend_ops.def, on odd, broadcast and strided shapes, in f32, bf16 and\n"
             "f16, forward and backward, run on each backend and compared with a reference: the CPU with a naive\n"
             "loop in double precision, sim with the same, a GPU with the CPU. The GPU check runs this table first.");
  lesson04::op_table_on_every_backend();
}

void the_gpt_on_the_device(lesson::Beats& beats, const Options& opt, State& s) {
  beats.beat("the GPT step on the device: the CPU's losses, bit for bit",
             "The baby GPT trained on the host, then on sim, from the same seed on the same batches. The\n"
             "model moves to the device once (initialize), the batches go up each step, the loss comes down.");
  lesson04::train_on_cpu_and_sim(s.cfg, s.V, *s.sampler, opt.steps);
}

// The lesson: its six beats in order; main() below parses the options and runs it.
int run(lesson::Beats& beats, const Options& opt) {
  if (!std::filesystem::exists(opt.data))  // the command line's to fix: a usage error
    throw lesson::UsageError("data file '" + opt.data +
                             "' not found. Make it with `make data` (writes datasets/kjv.txt from Debian's "
                             "bible-kjv package), or pass --data FILE (any UTF-8 text)");
  State s;
  s.cfg = lesson04::baby_config(32, opt.steps);
  s.ds = data::TextDataset::load(opt.data, s.cfg.training.tokenizer, s.cfg.model.block_size);
  s.V = s.ds->tokenizer().vocab_size();
  s.sampler.emplace(s.ds->tokens_ptr(data::Split::train), s.cfg.train_micro_batch_size_per_gpu, s.cfg.model.block_size,
                    s.cfg.training.seed);
  the_device_and_the_host(beats, s);
  the_caching_allocator(beats, s);
  the_halving_tree(beats, opt);
  naive_to_fast(beats, opt);
  the_op_table(beats);
  the_gpt_on_the_device(beats, opt, s);
  std::printf("\nLesson 04 done. Next: make lesson-05 (data parallelism on 4 ranks).\n");
  return 0;
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_one_process(argc, argv, "Lesson 04: the device", 6, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text the GPT trains on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of beat 6, on cpu and on sim");
    beats.option("--rows", opt.rows, "rows of the softmax of beats 3 and 4", /*quick=*/1024);
    beats.option("--cols", opt.cols, "entries per row (the softmax's N)");
    beats.option("--reps", opt.reps, "timed runs of each kernel (the median is printed)", /*quick=*/5);
  }, [&](lesson::Beats& beats) { return run(beats, opt); });
}
