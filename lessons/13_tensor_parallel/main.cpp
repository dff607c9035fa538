// Lesson 13: tensor parallelism (Megatron). mpirun -np 8 build/bin/lesson-13 [--auto] [--quick] [--beat N] [--data TEXT]
// (make lesson-13 starts it on 8 ranks)
// One layer's matrices split over a tensor group of 2 ranks: a Linear by columns and by rows, each rank's
// slice and partial result beside the unsplit x·Wᵀ; Megatron's f and g run forward and backward; one block of
// the GPT split the same way, its all-reduces counted (2 forward, 2 backward of B·T·C); the cross-entropy over
// a vocabulary split in two, with 3 all-reduces of N floats instead of a gather of the logits; and the 8 ranks
// as a data × pipeline × tensor grid, on which lesson 05's KJV run gives DDP's losses. Every tensor group runs
// beats 1-4 alike; rank 0 prints for {0, 1}.
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "common/beat.h"
#include "common/ranks.h"
#include "dist/grid.h"
#include "dist/process_group.h"
#include "gpt_beats.h"
#include "grid_run.h"
#include "tensor_group.h"
#include "tp/layers.h"
#include "tp/regions.h"

using namespace minitorch;
using lesson13::gather;
using lesson13::print_matrix;
using lesson13::row_text;
using lesson13::verdict;
namespace ag = autograd;

namespace {
/// The grid every beat runs on: tensor groups of 2, and 2 pipeline stages when the ranks allow (8: 2 × 2 × 2).
dist::Grid lesson_grid(dist::ProcessGroup& world) { return dist::make_grid(world, world.size() % 4 == 0 ? 2 : 1, 2); }
}  // namespace

// tensor: t = 2 ranks. x (2, 4), W (4, 4), b (4) whole on every rank; column: W_r (4/t, 4), y_r (2, 4/t);
// row: x_r (2, 4/t), W_r (4, 4/t), the partial and the all-reduced y (2, 4)
void a_linear_split_by_columns_and_by_rows(lesson::Beats& beats, dist::ProcessGroup& tensor) {
  beats.beat("a Linear split by columns and by rows",
             "y = x·Wᵀ + b with W (out, in). Column-parallel (ColumnParallelLinear): rank r keeps out/t rows of W,\n"
             "its output features, and computes y_r = x·W_rᵀ + b_r from the whole x: nothing moves, the t outputs\n"
             "side by side are y. Row-parallel (RowParallelLinear): rank r keeps in/t columns of W and the matching\n"
             "columns x_r of x; x_r·W_rᵀ is a partial sum of every output, one all-reduce adds them, then b once.\n"
             "The tensor group here is world ranks {0, 1}; small integers, so the sums are exact.");
  const int t = tensor.size(), r = tensor.rank();
  Generator gen(13);  // the same full tensors on every rank, as the unsplit model draws them
  const std::int64_t rows = 2, in = 4, out = 4;
  const Tensor x = lesson13::small_integers({rows, in}, gen), W = lesson13::small_integers({out, in}, gen),
               b = lesson13::small_integers({out}, gen);
  const Tensor y = ag::linear(x, W, b);  // (rows, out): the layer on one rank
  print_matrix("x", x);
  print_matrix("W", W);
  print_matrix("b", b);
  print_matrix("y = x·Wᵀ + b on one rank", y);

  std::printf("\ncolumn-parallel, t = %d: rank r keeps rows [r·%lld, (r+1)·%lld) of W and of b\n", t,
              static_cast<long long>(out / t), static_cast<long long>(out / t));
  const tp::ColumnParallelLinear column(W, b, tensor);
  const std::size_t before = tensor.stats().log.size();
  const Tensor y_r = column.forward(x);  // (rows, out/t)
  const lesson13::Traffic column_traffic = lesson13::traffic_since(tensor.stats(), before);
  const Tensor weights = gather(tensor, column.weight), outputs = gather(tensor, y_r);  // (t, out/t, in), (t, rows, out/t)
  for (int q = 0; q < t; ++q) {
    print_matrix("  rank " + std::to_string(q) + ": W_" + std::to_string(q), weights.narrow(0, q, 1).reshape({out / t, in}));
    print_matrix("  rank " + std::to_string(q) + ": y_" + std::to_string(q) + " = x·W_" + std::to_string(q) + "ᵀ + b_" +
                     std::to_string(q),
                 outputs.narrow(0, q, 1).reshape({rows, out / t}));
  }
  // [y_0 | y_1]: rank q's columns are output features q·out/t ..
  const Tensor side_by_side = outputs.permute({1, 0, 2}).reshape({rows, out});
  print_matrix("[y_0 | y_1]", side_by_side);
  std::printf("max |[y_0 | y_1] - y| = %g %s; all-reduces in forward: %lld\n", lesson13::max_abs_diff(side_by_side, y),
              verdict(lesson13::max_abs_diff(side_by_side, y), 0.0, "unsplit").c_str(),
              static_cast<long long>(column_traffic.calls));

  std::printf("\nrow-parallel, t = %d: rank r keeps columns [r·%lld, (r+1)·%lld) of W and of x; b whole\n", t,
              static_cast<long long>(in / t), static_cast<long long>(in / t));
  const tp::RowParallelLinear row(W, b, tensor);
  const Tensor x_r = x.narrow(1, r * (in / t), in / t).contiguous();  // (rows, in/t)
  Tensor partial;                                                      // (rows, out): what g sums
  {
    ag::NoGradGuard shown_only;
    partial = ag::linear(x_r, row.weight, Tensor());
  }
  const std::size_t row_before = tensor.stats().log.size();
  const Tensor y_row = row.forward(x_r);  // (rows, out), the same on every rank
  const lesson13::Traffic row_traffic = lesson13::traffic_since(tensor.stats(), row_before);
  const Tensor slices = gather(tensor, x_r), row_weights = gather(tensor, row.weight), partials = gather(tensor, partial);
  for (int q = 0; q < t; ++q) {
    const std::string n = std::to_string(q);
    print_matrix("  rank " + n + ": x_" + n, slices.narrow(0, q, 1).reshape({rows, in / t}));
    print_matrix("  rank " + n + ": W_" + n, row_weights.narrow(0, q, 1).reshape({out, in / t}));
    print_matrix("  rank " + n + ": partial x_" + n + "·W_" + n + "ᵀ", partials.narrow(0, q, 1).reshape({rows, out}));
  }
  print_matrix("all-reduce (sum) of the partials, + b", y_row);
  const double row_diff = lesson13::max_abs_diff(y_row, y);
  std::printf("max |all-reduced - y| = %g %s; all-reduces in forward: %lld, of %lld elements (rows × out)\n", row_diff,
              verdict(row_diff, 0.0, "unsplit").c_str(), static_cast<long long>(row_traffic.calls),
              static_cast<long long>(y.numel()));
  std::printf("\nA column layer's y_r (rows, out/t) is exactly the input slice a row layer wants: column then row (the\n"
              "MLP's c_fc, c_proj) needs nothing in between, one all-reduce at the end.\n");
}

// tensor: t = 2 ranks. f: x (4) replicated -> y (4); g: a partial sum (4) per rank -> y (4) replicated
void f_and_g(lesson::Beats& beats, dist::ProcessGroup& tensor) {
  beats.beat("f and g: the two conjugate operators",
             "f is the identity forward and an all-reduce backward; g an all-reduce forward and the identity\n"
             "backward. An all-reduce-sum's adjoint is an all-reduce-sum (y_s = sum_r x_r, so dx_r = sum_s dy_s).\n"
             "f copies one x to every rank's branch, and each branch adds its own part to x's gradient: sum them.\n"
             "g sums the partials into one y that every rank holds; the one loss computed from it gives every rank\n"
             "the whole dL/dy already: summing t copies would count the loss t times, so g passes it back as is.\n"
             "Each one's backward is the other's forward: conjugate.");
  const int t = tensor.size(), r = tensor.rank();
  Tensor x = Tensor::from_vector({1, 2, 3, 4}, {4}).set_requires_grad();  // replicated: the same on every rank
  std::size_t mark = tensor.stats().log.size();
  const Tensor y = tp::f(x, tensor);
  const lesson13::Traffic f_forward = lesson13::traffic_since(tensor.stats(), mark);
  const std::vector<float> dy(4, static_cast<float>(r + 1));  // each rank's branch weighs y its own way
  mark = tensor.stats().log.size();
  ag::backward(ag::sum(ag::mul(y, Tensor::from_vector(dy, {4}))));
  const lesson13::Traffic f_backward = lesson13::traffic_since(tensor.stats(), mark);
  const std::vector<float> ys = gather(tensor, y.to_vector()), dys = gather(tensor, dy), grads = gather(tensor, x.grad().to_vector());
  auto of_rank = [](const std::vector<float>& all, int q) {  // member q's 4 values
    return std::vector<float>(all.begin() + 4 * q, all.begin() + 4 * (q + 1));
  };
  std::printf("f, x = %s on both ranks (replicated):\n", row_text(x.to_vector()).c_str());
  for (int q = 0; q < t; ++q)
    std::printf("  rank %d: forward y = f(x) = %s   its branch's dL/dy = %s   backward x.grad = %s\n", q,
                row_text(of_rank(ys, q)).c_str(), row_text(of_rank(dys, q)).c_str(), row_text(of_rank(grads, q)).c_str());
  std::printf("  all-reduces: forward %lld, backward %lld; x.grad = the sum of the branches' dL/dy %s\n",
              static_cast<long long>(f_forward.calls), static_cast<long long>(f_backward.calls),
              verdict(lesson13::max_abs_diff(x.grad(), Tensor::full({4}, static_cast<float>(t * (t + 1) / 2))), 0.0,
                      "sum").c_str());

  // g: each rank holds a partial sum (a row layer's product); the loss after it is one, computed on every rank
  Tensor partial = Tensor::from_vector(r == 0 ? std::vector<float>{1, 0, 2, 1} : std::vector<float>{0, 3, 1, 1}, {4});
  partial.set_requires_grad();
  const Tensor c = Tensor::from_vector({1, -1, 2, 0}, {4});  // dL/dy of the replicated rest of the network
  mark = tensor.stats().log.size();
  const Tensor whole = tp::g(partial, tensor);
  const lesson13::Traffic g_forward = lesson13::traffic_since(tensor.stats(), mark);
  mark = tensor.stats().log.size();
  ag::backward(ag::sum(ag::mul(whole, c)));
  const lesson13::Traffic g_backward = lesson13::traffic_since(tensor.stats(), mark);
  const std::vector<float> parts = gather(tensor, partial.detach().to_vector()), wholes = gather(tensor, whole.to_vector()),
                           g_grads = gather(tensor, partial.grad().to_vector());
  std::printf("\ng, the loss L = sum(c·y) with c = %s, the same on both ranks:\n", row_text(c.to_vector()).c_str());
  for (int q = 0; q < t; ++q)
    std::printf("  rank %d: partial x_%d = %s   forward y = g(x_%d) = %s   backward x_%d.grad = %s\n", q, q,
                row_text(of_rank(parts, q)).c_str(), q, row_text(of_rank(wholes, q)).c_str(), q,
                row_text(of_rank(g_grads, q)).c_str());
  std::printf("  all-reduces: forward %lld, backward %lld\n", static_cast<long long>(g_forward.calls),
              static_cast<long long>(g_backward.calls));
  // On one rank the same loss is L = sum(c·(x_0 + x_1)): dL/dx_q = c, what g's identity backward gave.
  Tensor summed = partial.grad().clone();
  {
    dist::NoRecordScope not_the_lessons(tensor);
    tensor.all_reduce(summed);
  }
  std::printf("  on one rank: L = sum(c·(x_0 + x_1)), dL/dx_q = c %s;\n"
              "  an all-reduce in g's backward would give %s, the one loss counted t = %d times\n",
              verdict(lesson13::max_abs_diff(partial.grad(), c), 0.0, "g's backward").c_str(),
              row_text(summed.to_vector()).c_str(), t);
}

// world: N ranks; grid: its stages × d × t groups. Gathered to rank 0: per rank 3 coordinates + t + d + stages
// world ranks (floats)
void the_3d_grid(lesson::Beats& beats, dist::ProcessGroup& world, const dist::Grid& grid) {
  beats.beat("the 3D grid: data × pipeline × tensor",
             "dist::make_grid(world, stages, tensor) cuts the ranks Megatron's way, tensor ranks adjacent:\n"
             "tp = w mod t, dp = (w / t) mod d, stage = w / (t·d). The tensor group all-reduces activations twice per\n"
             "block each way, the most traffic, so its ranks are neighbours (one node's fast links); the data group\n"
             "reduces gradients once a step; the pipeline sends one activation per micro-batch between stages.\n"
             "Each rank reports its coordinates and its three groups, their members gathered live.");
  const int N = world.size(), t = grid.tp_size, d = grid.dp_size, P = grid.stages;
  auto members = [&](dist::ProcessGroup& group) {  // the world ranks of `group`, in its rank order
    return gather(group, std::vector<float>{static_cast<float>(world.rank())});
  };
  std::vector<float> mine = {static_cast<float>(grid.dp_rank), static_cast<float>(grid.stage),
                             static_cast<float>(grid.tp_rank)};
  for (dist::ProcessGroup* group : {grid.tensor.get(), grid.data.get(), grid.pipe.get()})
    for (float w : members(*group)) mine.push_back(w);
  const std::size_t per_rank = mine.size();
  const std::vector<float> all = gather(world, mine);
  auto counted = [](int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  std::printf("%d ranks = %s × %s × %s (dist::make_grid(world, %d, %d))\n\n", N, counted(P, "stage", "stages").c_str(),
              counted(d, "data-parallel replica", "data-parallel replicas").c_str(),
              counted(t, "tensor rank", "tensor ranks").c_str(), P, t);
  std::printf("%10s  %-24s %-14s %-14s %-14s\n", "world rank", "(data, pipeline, tensor)", "tensor group", "data group",
              "pipeline");
  auto group_text = [](const float* first, int n) {  // "{0, 2}"
    std::string s = "{";
    for (int k = 0; k < n; ++k) {
      if (k) s += ", ";
      s += std::to_string(static_cast<int>(first[k]));
    }
    s += "}";
    return s;
  };
  int agree = 0;
  for (int w = 0; w < N; ++w) {
    const float* row = all.data() + static_cast<std::size_t>(w) * per_rank;
    const int dp = static_cast<int>(row[0]), stage = static_cast<int>(row[1]), tp_rank = static_cast<int>(row[2]);
    bool as_formula = dp == (w / t) % d && stage == w / (t * d) && tp_rank == w % t;
    for (int q = 0; q < t; ++q) as_formula = as_formula && static_cast<int>(row[3 + q]) == grid.world_rank(stage, dp, q);
    for (int q = 0; q < d; ++q) as_formula = as_formula && static_cast<int>(row[3 + t + q]) == grid.world_rank(stage, q, tp_rank);
    for (int s = 0; s < P; ++s) as_formula = as_formula && static_cast<int>(row[3 + t + d + s]) == grid.world_rank(s, dp, tp_rank);
    agree += as_formula;
    char coordinates[48];
    std::snprintf(coordinates, sizeof coordinates, "(%d, %d, %d)", dp, stage, tp_rank);
    std::printf("%10d  %-24s %-14s %-14s %-14s %s\n", w, coordinates, group_text(row + 3, t).c_str(),
                group_text(row + 3 + t, d).c_str(), group_text(row + 3 + t + d, P).c_str(),
                as_formula ? "(= formula)" : "(DIFFERENT)");
  }
  std::printf("ranks whose coordinates and groups are the formula's: %d of %d\n\n", agree, N);
  for (int s = 0; s < P; ++s) {
    std::printf("stage %d:", s);
    for (int q = 0; q < d; ++q) {
      std::printf("   replica %d: [", q);
      for (int k = 0; k < t; ++k) std::printf("%s%d", k ? " " : "", grid.world_rank(s, q, k));
      std::printf("]");
    }
    std::printf("\n");
  }
  // An all-reduce stays inside its group: the sum of the world ranks over each of rank 0's groups.
  std::vector<float> sums;
  for (dist::ProcessGroup* group : {grid.tensor.get(), grid.data.get(), grid.pipe.get()}) {
    Tensor w = Tensor::full({1}, static_cast<float>(world.rank()));
    group->all_reduce(w);
    sums.push_back(w.item());
  }
  std::printf("\nrank 0 all-reduces its world rank in each of its groups: tensor %.0f, data %.0f, pipeline %.0f (each the\n"
              "sum of that group's members only)\n", static_cast<double>(sums[0]), static_cast<double>(sums[1]),
              static_cast<double>(sums[2]));
}

/// The lesson's options: the corpus and the length of beat 6's runs.
struct Options {
  std::string data = "datasets/kjv.txt";
  long long steps = 200;
};

int run(lesson::Beats& beats, dist::ProcessGroup& world, const Options& opt) {
  const lesson::RanksLesson lesson13{
      .number = "13",
      .ranks_do = "tensor groups of 2, on 8 ranks a 2 × 2 × 2 grid",
      .data = opt.data,
      .exact_ranks = 0,
      .note = "Beats 1-4 run on every tensor group of 2 alike; beats 5 and 6 use the grid of the ranks there are.",
      .ranks_multiple = 2,
      .make_ranks = 8};
  return lesson::run_on_ranks(world, lesson13, [&] {
    const dist::Grid grid = lesson_grid(world);
    if (world.size() != 8)
      std::printf("(%d ranks: beat 5's grid is %d × %d × 2; `make lesson-13` starts 8 ranks, the 2 × 2 × 2 grid)\n",
                  world.size(), grid.stages, grid.dp_size);
    a_linear_split_by_columns_and_by_rows(beats, *grid.tensor);
    f_and_g(beats, *grid.tensor);
    lesson13::one_blocks_communication(beats, *grid.tensor);
    lesson13::vocab_parallel_cross_entropy(beats, *grid.tensor);
    the_3d_grid(beats, world, grid);
    lesson13::kjv_run_on_the_grid(beats, world, opt.data, opt.steps);
  });
}

int main(int argc, char** argv) {
  Options opt;
  return lesson::main_on_ranks(argc, argv, "Lesson 13: tensor parallelism", 6, [&](lesson::Beats& beats) {
    beats.option("--data", opt.data, "FILE", "the text beat 6 trains on; `make data` writes the KJV");
    beats.option("--steps", opt.steps, "optimizer steps of each of beat 6's two runs", /*quick=*/10);
  }, [&](lesson::Beats& beats, dist::ProcessGroup& world) { return run(beats, world, opt); });
}
