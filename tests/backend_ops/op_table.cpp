// The backend op table (op_table.h): one entry per kernel, dtype and layout worth telling apart.
#include "op_table.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "minitorch/not_implemented.h"
#include "minitorch/ops.h"
#include "recording_backend.h"

namespace backend_ops {

using minitorch::BinaryOp;
using minitorch::Device;
using minitorch::Generator;
using minitorch::UnaryOp;
namespace ops = minitorch::ops;

namespace {

// ---- input builders ----
Input normal(Shape s, DType dt = DType::f32, double std = 1) { return {std::move(s), dt, Input::Fill::normal, 0, std, {}, {}}; }
Input uniform(Shape s, DType dt, double lo, double hi) { return {std::move(s), dt, Input::Fill::uniform, lo, hi, {}, {}}; }
Input ids(Shape s, std::int64_t V, std::vector<std::int32_t> fixed = {}) {
  return {std::move(s), DType::i32, Input::Fill::ids, 0, static_cast<double>(V), std::move(fixed), {}};
}
Input viewed(Input in, std::function<Tensor(const Tensor&)> view) {
  in.view = std::move(view);
  return in;
}
Tensor transposed(const Tensor& t) { return t.transpose(0, 1); }

std::string dt(DType t) { return minitorch::dtype_name(t); }
std::string dims(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(s[i]);
  }
  return out;
}

// A new contiguous copy of t on t's device, written by the backend under test itself.
Tensor fresh_copy(Backend& k, const Tensor& t) {
  Tensor d = Tensor::empty(t.shape(), t.dtype(), t.device());
  k.copy_(d, t);
  return d;
}
Tensor scalar_result(double v) { return Tensor::from_vector({static_cast<float>(v)}, {1}); }

// Adds a case; any half input or output dtype loosens the tolerance to kHalf.
struct Table {
  std::vector<OpCase> cases;
  void add(std::string name, std::vector<Input> inputs, decltype(OpCase::run) run, Tol tol = kElementwise,
           bool half_result = false) {
    bool half = half_result;
    for (const Input& in : inputs) half = half || minitorch::is_half(in.dtype);
    cases.push_back({std::move(name), std::move(inputs), std::move(run), half ? kHalf : tol, false});
  }
  void add_throwing(std::string name, std::vector<Input> inputs, decltype(OpCase::run) run) {
    cases.push_back({std::move(name), std::move(inputs), std::move(run), kExact, true});
  }
};

void copies(Table& t) {
  const std::vector<std::pair<DType, DType>> pairs{{DType::f32, DType::f32},  {DType::f32, DType::bf16},
                                                    {DType::bf16, DType::f32}, {DType::bf16, DType::bf16},
                                                    {DType::f16, DType::f32},  {DType::f32, DType::f16}};
  for (const auto& [from, to] : pairs)
    for (bool strided : {false, true}) {
      const DType into = to;
      t.add("copy_" + dt(from) + "_to_" + dt(to) + (strided ? "_from_transposed_7x5" : "_5x7"),
            {strided ? viewed(normal({7, 5}, from), transposed) : normal({5, 7}, from)},
            [into](Backend& k, const std::vector<Tensor>& in) {
              Tensor d = Tensor::empty(in[0].shape(), into, in[0].device());
              k.copy_(d, in[0]);
              return std::vector<Tensor>{d};
            },
            kExact, minitorch::is_half(to));
    }
  t.add("copy_i32_from_transposed_3x4", {viewed(ids({3, 4}, 100), transposed)},
        [](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{fresh_copy(k, in[0])}; }, kExact);
  // The strided write autograd's NarrowBackward makes: a block of a transposed destination.
  for (DType d : {DType::f32, DType::bf16})
    t.add("copy_into_strided_view_" + dt(d), {normal({4, 6}, d), normal({3, 4}, DType::f32)},
          [](Backend& k, const std::vector<Tensor>& in) {
            Tensor base = fresh_copy(k, in[0]);
            Tensor view = base.transpose(0, 1).narrow(0, 1, 3);  // (3, 4) with strides (1, 6)
            k.copy_(view, in[1]);
            return std::vector<Tensor>{base};
          },
          kExact, true);
  for (DType d : {DType::f32, DType::bf16}) {
    t.add("fill_" + dt(d) + "_5x7", {normal({5, 7}, d)}, [](Backend& k, const std::vector<Tensor>& in) {
      Tensor x = fresh_copy(k, in[0]);
      k.fill_(x, -1.25f);
      return std::vector<Tensor>{x};
    }, kExact);
    t.add("fill_strided_view_" + dt(d), {normal({4, 6}, d)}, [](Backend& k, const std::vector<Tensor>& in) {
      Tensor x = fresh_copy(k, in[0]);
      Tensor v = x.transpose(0, 1).narrow(0, 2, 3);
      k.fill_(v, 0.5f);
      return std::vector<Tensor>{x};
    }, kExact);
  }
}

void elementwise(Table& t) {
  const std::vector<std::pair<Shape, Shape>> shapes{{{4, 5}, {4, 5}},       {{4, 5}, {5}},  {{2, 3, 4}, {3, 1}},
                                                    {{2, 1, 4}, {1, 3, 1}}, {{3}, {}},      {{}, {2, 2}},
                                                    {{7, 33}, {33}}};
  const std::pair<BinaryOp, const char*> binops[]{
      {BinaryOp::add, "add"}, {BinaryOp::sub, "sub"}, {BinaryOp::mul, "mul"}, {BinaryOp::div, "div"}};
  auto binary = [](BinaryOp op) {
    return [op](Backend& k, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{k.binary(op, in[0], in[1], ops::broadcast_shapes(in[0].shape(), in[1].shape()))};
    };
  };
  for (const auto& [op, name] : binops) {
    for (DType d : {DType::f32, DType::bf16})
      for (const auto& [sa, sb] : shapes)
        t.add(std::string("binary_") + name + "_" + dt(d) + "_" + dims(sa) + "_by_" + dims(sb),
              {normal(sa, d), uniform(sb, d, 0.5, 2)}, binary(op));
    t.add(std::string("binary_") + name + "_f16_4x5_by_5", {normal({4, 5}, DType::f16), uniform({5}, DType::f16, 0.5, 2)},
          binary(op));
    t.add(std::string("binary_") + name + "_f32_by_bf16_4x5", {normal({4, 5}), uniform({4, 5}, DType::bf16, 0.5, 2)},
          binary(op));
    t.add(std::string("binary_") + name + "_f32_permuted_by_transposed",
          {viewed(normal({4, 6, 5}), [](const Tensor& x) { return x.permute({2, 0, 1}).narrow(0, 1, 3); }),
           viewed(uniform({6, 4}, DType::f32, 0.5, 2), transposed)},
          binary(op));
    t.add(std::string("binary_") + name + "_f32_expanded_1x6_by_4x6",
          {viewed(normal({1, 6}), [](const Tensor& x) { return x.expand({4, 6}); }), uniform({4, 6}, DType::f32, 0.5, 2)},
          binary(op));
  }
  const std::tuple<UnaryOp, const char*, float> unops[]{
      {UnaryOp::affine, "affine", 1.5f}, {UnaryOp::neg, "neg", 0},  {UnaryOp::exp, "exp", 0},
      {UnaryOp::log, "log", 0},          {UnaryOp::tanh, "tanh", 0}, {UnaryOp::sqrt, "sqrt", 0},
      {UnaryOp::pow, "pow2", 2.f},       {UnaryOp::pow, "pow0.5", 0.5f}, {UnaryOp::pow, "pow3", 3.f}};
  for (const auto& [op, name, p0] : unops) {
    const UnaryOp o = op;
    const float a = p0;
    auto run = [o, a](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{k.unary(o, in[0], a, -0.25f)}; };
    for (DType d : {DType::f32, DType::bf16, DType::f16})
      t.add(std::string("unary_") + name + "_" + dt(d) + "_3x17", {uniform({3, 17}, d, 0.1, 3)}, run);
    t.add(std::string("unary_") + name + "_f32_transposed_17x3", {viewed(uniform({3, 17}, DType::f32, 0.1, 3), transposed)},
          run);
  }
  for (DType dd : {DType::f32, DType::bf16})
    for (DType ds : {DType::f32, DType::bf16}) {
      t.add("add_inplace_" + dt(dd) + "_plus_transposed_" + dt(ds), {normal({6, 7}, dd), viewed(normal({7, 6}, ds), transposed)},
            [](Backend& k, const std::vector<Tensor>& in) {
              Tensor d = fresh_copy(k, in[0]);
              k.add_(d, in[1], -0.5f);
              return std::vector<Tensor>{d};
            });
    }
  for (DType d : {DType::f32, DType::bf16})
    t.add("scale_inplace_" + dt(d), {normal({6, 7}, d)}, [](Backend& k, const std::vector<Tensor>& in) {
      Tensor x = fresh_copy(k, in[0]);
      k.scale_(x, 0.3f);
      return std::vector<Tensor>{x};
    });
}

void reductions(Table& t) {
  const std::vector<std::pair<std::vector<std::int64_t>, bool>> plans{
      {{}, false}, {{0}, false}, {{1}, false}, {{2}, false}, {{0, 2}, false}, {{0, 1, 2}, false}, {{1}, true}, {{0, 2}, true}};
  auto sum = [](std::vector<std::int64_t> ds, bool keep) {
    return [ds, keep](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{k.sum(in[0], ds, keep)}; };
  };
  auto plan_name = [](const std::vector<std::int64_t>& ds, bool keep) {
    std::string n = "dims";
    for (auto d : ds) n += std::to_string(d);
    if (ds.empty()) n += "_none";
    return n + (keep ? "_keepdim" : "");
  };
  for (const auto& [ds, keep] : plans) {
    t.add("sum_f32_3x4x5_" + plan_name(ds, keep), {normal({3, 4, 5})}, sum(ds, keep), kReduction);
    t.add("sum_f32_permuted_" + plan_name(ds, keep),
          {viewed(normal({5, 4, 3}), [](const Tensor& x) { return x.permute({2, 1, 0}); })}, sum(ds, keep), kReduction);
  }
  t.add("sum_bf16_3x4x5_dims1", {normal({3, 4, 5}, DType::bf16)}, sum({1}, false));
  t.add("sum_f16_3x4x5_dims02", {normal({3, 4, 5}, DType::f16)}, sum({0, 2}, false));
  t.add("sum_f32_1x7x1_dims1", {normal({1, 7, 1})}, sum({1}, false), kReduction);
  t.add("sum_f32_long_rows_3x1000_dims1", {normal({3, 1000})}, sum({1}, false), kReduction);
  // long columns, few outputs (a bias gradient): the GPU sums slabs of rows, then the slabs
  t.add("sum_f32_long_columns_2x300x37_dims1", {normal({2, 300, 37})}, sum({1}, false), kReduction);

  auto max_last = [](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{k.max_last(in[0])}; };
  t.add("max_last_f32_5x9", {normal({5, 9})}, max_last, kExact);
  t.add("max_last_f32_2x3x1", {normal({2, 3, 1})}, max_last, kExact);
  t.add("max_last_bf16_4x33", {normal({4, 33}, DType::bf16)}, max_last, kExact, true);
  t.add("max_last_f32_transposed_9x5", {viewed(normal({5, 9}), transposed)}, max_last, kExact);

  auto sum_squares = [](Backend& k, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{scalar_result(k.sum_squares(in[0]))};
  };
  t.add("sum_squares_f32_1000", {normal({1000})}, sum_squares, kReduction);
  t.add("sum_squares_bf16_3x333", {normal({3, 333}, DType::bf16)}, sum_squares, kReduction);
  t.add("sum_squares_f32_transposed", {viewed(normal({33, 7}), transposed)}, sum_squares, kReduction);
}

void matmuls(Table& t) {
  constexpr Tol kMatmul{1e-4, 1e-4};
  struct M {
    const char* name;
    Input a, b;
    bool ta, tb;
  };
  const std::vector<M> cases{
      {"5x7_by_7x3", normal({5, 7}), normal({7, 3}), false, false},
      {"trans_a_7x5_by_7x3", normal({7, 5}), normal({7, 3}), true, false},
      {"5x7_by_trans_b_3x7", normal({5, 7}), normal({3, 7}), false, true},
      {"trans_both", normal({7, 5}), normal({3, 7}), true, true},
      {"batched_2x3x5x4_by_shared_4x6", normal({2, 3, 5, 4}), normal({4, 6}), false, false},
      {"batched_2x5x4_by_2x4x3", normal({2, 5, 4}), normal({2, 4, 3}), false, false},
      {"batched_2x5x4_by_trans_b_2x3x4", normal({2, 5, 4}), normal({2, 3, 4}), false, true},
      {"bf16_16x24_by_24x8", normal({16, 24}, DType::bf16), normal({24, 8}, DType::bf16), false, false},
      {"bf16_by_f32_16x24_by_24x8", normal({16, 24}, DType::bf16), normal({24, 8}), false, false},
      // a 16-bit model's backward: the f32 gradient times a bf16 weight (TF32 on the GPU)
      {"f32_by_bf16_trans_b_64x96_by_80x96", normal({64, 96}), normal({80, 96}, DType::bf16), false, true},
      {"f16_4x8_by_8x4", normal({4, 8}, DType::f16), normal({8, 4}, DType::f16), false, false},
      {"64x96_by_96x80", normal({64, 96}), normal({96, 80}), false, false},
      {"transposed_view_5x4_by_4x3", viewed(normal({4, 5}), transposed), normal({4, 3}), false, false},
      {"1x1_by_1x1", normal({1, 1}), normal({1, 1}), false, false},
  };
  for (const M& m : cases) {
    const bool ta = m.ta, tb = m.tb;
    t.add(std::string("matmul_") + m.name, {m.a, m.b},
          [ta, tb](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{k.matmul(in[0], in[1], ta, tb)}; },
          kMatmul);
  }
}

void softmaxes(Table& t) {
  auto softmax = [](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{k.softmax(in[0])}; };
  t.add("softmax_f32_4x7", {normal({4, 7})}, softmax, kReduction);
  t.add("softmax_f32_2x3x33", {normal({2, 3, 33})}, softmax, kReduction);
  t.add("softmax_f32_large_logits_4x7", {normal({4, 7}, DType::f32, 40)}, softmax, kReduction);
  t.add("softmax_bf16_4x7", {normal({4, 7}, DType::bf16)}, softmax);
  t.add("softmax_f16_4x7", {normal({4, 7}, DType::f16)}, softmax);
  t.add("softmax_f32_transposed_7x4", {viewed(normal({4, 7}), transposed)}, softmax, kReduction);
  t.add("softmax_f32_long_rows_2x1000", {normal({2, 1000})}, softmax, kReduction);
  auto softmax_bwd = [](Backend& k, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{k.softmax_backward(in[0], in[1])};
  };
  t.add("softmax_backward_f32_4x7", {uniform({4, 7}, DType::f32, 0, 1), normal({4, 7})}, softmax_bwd, kReduction);
  t.add("softmax_backward_bf16_dy_4x7", {uniform({4, 7}, DType::f32, 0, 1), normal({4, 7}, DType::bf16)}, softmax_bwd);
  t.add("softmax_backward_f32_transposed", {viewed(uniform({7, 4}, DType::f32, 0, 1), transposed), normal({4, 7})},
        softmax_bwd, kReduction);

  for (float scale : {0.5f, 1.f}) {
    const float s = scale;
    const std::string sc = scale == 1.f ? "_scale1" : "_scale0.5";
    auto causal = [s](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{k.causal_softmax(in[0], s)}; };
    // backward from the forward's own y (zero above the diagonal), as autograd calls it
    auto causal_bwd = [s](Backend& k, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{k.causal_softmax_backward(k.causal_softmax(in[0], s), in[1], s)};
    };
    t.add("causal_softmax_f32_2x5x5" + sc, {normal({2, 5, 5})}, causal, kReduction);
    t.add("causal_softmax_bf16_1x2x8x8" + sc, {normal({1, 2, 8, 8}, DType::bf16)}, causal);
    t.add("causal_softmax_f32_transposed_5x5" + sc, {viewed(normal({5, 5}), transposed)}, causal, kReduction);
    t.add("causal_softmax_f32_3x1x1" + sc, {normal({3, 1, 1})}, causal, kReduction);
    t.add("causal_softmax_backward_f32_2x6x6" + sc, {normal({2, 6, 6}), normal({2, 6, 6})}, causal_bwd, kReduction);
    t.add("causal_softmax_backward_bf16_dy_2x6x6" + sc, {normal({2, 6, 6}), normal({2, 6, 6}, DType::bf16)}, causal_bwd);
  }
}

void nn_kernels(Table& t) {
  auto layernorm = [](Backend& k, const std::vector<Tensor>& in) {
    auto o = k.layernorm(in[0], in[1], in[2], 1e-5f);
    return std::vector<Tensor>{o.y, o.mean, o.rstd};
  };
  auto layernorm_bwd = [](Backend& k, const std::vector<Tensor>& in) {
    auto o = k.layernorm(in[0], in[1], in[2], 1e-5f);
    auto g = k.layernorm_backward(in[3], in[0], in[1], o.mean, o.rstd);
    return std::vector<Tensor>{g.dx, g.dweight, g.dbias};
  };
  struct L {
    const char* name;
    Input x;
    DType w;
    DType dy;
  };
  const std::vector<L> lns{{"f32_4x16", normal({4, 16}), DType::f32, DType::f32},
                           {"f32_2x3x33", normal({2, 3, 33}, DType::f32, 3), DType::f32, DType::f32},
                           {"bf16_x_4x16", normal({4, 16}, DType::bf16), DType::f32, DType::bf16},
                           {"bf16_weights_4x16", normal({4, 16}), DType::bf16, DType::f32},
                           {"f32_transposed_16x4", viewed(normal({16, 4}), transposed), DType::f32, DType::f32},
                           {"f32_one_column_3x1", normal({3, 1}), DType::f32, DType::f32},
                           // more rows than one slab of the GPU's dweight / dbias sums (32)
                           {"f32_many_rows_100x24", normal({100, 24}), DType::f32, DType::f32}};
  for (const L& l : lns) {
    const std::int64_t C = l.x.view ? l.x.shape.front() : l.x.shape.back();
    Shape xs = l.x.view ? Shape{l.x.shape[1], l.x.shape[0]} : l.x.shape;
    t.add(std::string("layernorm_") + l.name, {l.x, normal({C}, l.w), normal({C}, l.w)}, layernorm, kReduction);
    t.add(std::string("layernorm_backward_") + l.name, {l.x, normal({C}, l.w), normal({C}, l.w), normal(xs, l.dy)},
          layernorm_bwd, kReduction);
  }

  auto gelu = [](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{k.gelu(in[0])}; };
  auto gelu_bwd = [](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{k.gelu_backward(in[0], in[1])}; };
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    t.add("gelu_" + dt(d) + "_3x50", {normal({3, 50}, d, 3)}, gelu);
    t.add("gelu_backward_" + dt(d) + "_3x50", {normal({3, 50}, d, 3), normal({3, 50}, d)}, gelu_bwd, kReduction);
  }
  t.add("gelu_f32_transposed", {viewed(normal({50, 3}, DType::f32, 3), transposed)}, gelu);

  auto embedding = [](Backend& k, const std::vector<Tensor>& in) { return std::vector<Tensor>{k.embedding(in[0], in[1])}; };
  t.add("embedding_f32_11x8_by_2x5", {normal({11, 8}), ids({2, 5}, 11)}, embedding, kExact);
  t.add("embedding_bf16_11x8_by_2x5", {normal({11, 8}, DType::bf16), ids({2, 5}, 11)}, embedding, kExact, true);
  t.add("embedding_f32_ids_transposed", {normal({11, 8}), viewed(ids({5, 2}, 11), transposed)}, embedding, kExact);
  t.add_throwing("embedding_rejects_id_out_of_range", {normal({11, 8}), ids({2, 3}, 11, {0, 4, 10, 11, 2, 1})}, embedding);
  auto embedding_bwd = [](Backend& k, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{k.embedding_backward(in[0], in[1], 11)};
  };
  const std::vector<std::int32_t> repeats{0, 3, 3, 10, 0, 1, 3, 5, 5, 5};
  t.add("embedding_backward_f32_repeated_ids", {normal({2, 5, 8}), ids({2, 5}, 11, repeats)}, embedding_bwd, kReduction);
  t.add("embedding_backward_bf16_repeated_ids", {normal({2, 5, 8}, DType::bf16), ids({2, 5}, 11, repeats)}, embedding_bwd);
  t.add_throwing("embedding_backward_rejects_negative_id", {normal({1, 2, 8}), ids({1, 2}, 11, {3, -1})}, embedding_bwd);

  constexpr std::int32_t kIgnore = -1;
  auto ce = [](Backend& k, const std::vector<Tensor>& in) {
    auto o = k.cross_entropy(in[0], in[1], kIgnore);
    return std::vector<Tensor>{o.loss, o.probs, scalar_result(static_cast<double>(o.count))};
  };
  auto ce_bwd = [](Backend& k, const std::vector<Tensor>& in) {
    auto o = k.cross_entropy(in[0], in[1], kIgnore);
    return std::vector<Tensor>{k.cross_entropy_backward(o.probs, in[1], in[2], o.count, kIgnore)};
  };
  const std::vector<std::int32_t> targets{1, kIgnore, 10, 0, 5, 5};
  t.add("cross_entropy_f32_6x11_one_ignored", {normal({6, 11}, DType::f32, 2), ids({6}, 11, targets)}, ce, kReduction);
  t.add("cross_entropy_bf16_6x11", {normal({6, 11}, DType::bf16, 2), ids({6}, 11, targets)}, ce);
  t.add("cross_entropy_f32_transposed_logits", {viewed(normal({11, 6}, DType::f32, 2), transposed), ids({6}, 11, targets)},
        ce, kReduction);
  t.add("cross_entropy_f32_all_ignored_is_nan", {normal({2, 11}), ids({2}, 11, {kIgnore, kIgnore})}, ce, kReduction);
  t.add("cross_entropy_f32_long_rows_3x1000", {normal({3, 1000}, DType::f32, 3), ids({3}, 1000)}, ce, kReduction);
  t.add_throwing("cross_entropy_rejects_target_out_of_range", {normal({3, 11}), ids({3}, 11, {1, 11, 2})}, ce);
  t.add("cross_entropy_backward_f32_6x11", {normal({6, 11}, DType::f32, 2), ids({6}, 11, targets), normal({})}, ce_bwd,
        kReduction);
  t.add("cross_entropy_backward_bf16_logits", {normal({6, 11}, DType::bf16, 2), ids({6}, 11, targets), normal({})}, ce_bwd);
}

void optimizer(Table& t) {
  for (std::int64_t step : {1, 10}) {
    const ops::AdamWParams hp{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, step};
    auto adamw = [hp](Backend& k, const std::vector<Tensor>& in) {
      Tensor p = fresh_copy(k, in[0]), m = fresh_copy(k, in[2]), v = fresh_copy(k, in[3]);
      k.adamw_step(p, in[1], m, v, hp);
      return std::vector<Tensor>{p, m, v};
    };
    const std::string s = "_step" + std::to_string(step);
    auto state = [](Shape sh) {
      return std::vector<Input>{normal(sh, DType::f32, 0.1), uniform(sh, DType::f32, 1e-3, 1e-2)};
    };
    auto with = [&](Input p, Input g, Shape sh) {
      std::vector<Input> in{std::move(p), std::move(g)};
      for (Input& x : state(sh)) in.push_back(std::move(x));
      return in;
    };
    t.add("adamw_f32_37" + s, with(normal({37}), normal({37}), {37}), adamw, kReduction);
    t.add("adamw_bf16_param_37" + s, with(normal({37}, DType::bf16), normal({37}), {37}), adamw, kReduction);
    t.add("adamw_f16_param_37" + s, with(normal({37}, DType::f16), normal({37}), {37}), adamw, kReduction);
    t.add("adamw_f32_transposed_bf16_grad_5x7" + s,
          with(normal({5, 7}), viewed(normal({7, 5}, DType::bf16), transposed), {5, 7}), adamw, kReduction);
  }
}

}  // namespace

std::vector<OpCase> op_table() {
  Table t;
  copies(t);
  elementwise(t);
  reductions(t);
  matmuls(t);
  softmaxes(t);
  nn_kernels(t);
  optimizer(t);
  return t.cases;
}

std::vector<Tensor> make_inputs(const OpCase& c, std::uint64_t seed, Device device) {
  Generator gen(seed);
  std::vector<Tensor> out;
  for (const Input& in : c.inputs) {
    Tensor base;
    switch (in.fill) {
      case Input::Fill::normal: base = Tensor::randn(in.shape, gen, 0.f, static_cast<float>(in.hi), in.dtype); break;
      case Input::Fill::uniform:
        base = Tensor::uniform(in.shape, gen, static_cast<float>(in.lo), static_cast<float>(in.hi), in.dtype);
        break;
      case Input::Fill::ids: {
        std::vector<std::int32_t> v = in.fixed_ids;
        if (v.empty())
          for (std::int64_t i = 0; i < minitorch::shape_numel(in.shape); ++i)
            v.push_back(static_cast<std::int32_t>(gen.next_below(static_cast<std::uint64_t>(in.hi))));
        base = Tensor::from_ints(v, in.shape);
        break;
      }
    }
    if (device != base.device()) base = base.to(device);
    out.push_back(in.view ? in.view(base) : base);
  }
  return out;
}

std::string compare_result(const Tensor& got_any, const Tensor& want, Tol tol) {
  const Tensor got = got_any.device().is_cpu() ? got_any : got_any.to(Device::cpu());
  if (got.dtype() != want.dtype())
    return "dtype " + dt(got.dtype()) + ", the reference's " + dt(want.dtype());
  if (got.shape() != want.shape())
    return "shape " + minitorch::shape_str(got.shape()) + ", the reference's " + minitorch::shape_str(want.shape());
  const std::vector<double> g = read(got), w = read(want);
  int bad = 0;
  double worst = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    const double err = std::fabs(g[i] - w[i]);
    if (!(err <= tol.abs + tol.rel * std::fabs(w[i]))) {
      if (bad < 4) first << " [" << i << "] " << g[i] << " vs " << w[i] << ";";
      ++bad;
      worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    }
  }
  if (!bad) return "";
  std::ostringstream msg;
  msg << bad << " of " << g.size() << " elements outside abs " << tol.abs << " + rel " << tol.rel << " (worst |diff| "
      << worst << "):" << first.str();
  return msg.str();
}

CaseOutcome run_case(const OpCase& c, std::uint64_t seed, Backend& tested, Device device, Backend& reference) {
  CaseOutcome out;
  RecordingBackend recorder(tested);  // notes the kernels the case reaches
  const std::vector<Tensor> in_tested = make_inputs(c, seed, device), in_ref = make_inputs(c, seed, Device::cpu());
  auto refuses = [&](Backend& b, const std::vector<Tensor>& in) {
    try {
      c.run(b, in);
    } catch (const std::invalid_argument&) {
      return true;
    }
    return false;
  };
  try {
    if (c.throws) {
      const bool both = refuses(reference, in_ref) && refuses(recorder, in_tested);
      out.kernels = recorder.called();
      out.passed = both;
      if (!both) out.message = "the reference and the backend must both refuse this input (std::invalid_argument)";
      return out;
    }
    const std::vector<Tensor> got = c.run(recorder, in_tested);
    out.kernels = recorder.called();
    const std::vector<Tensor> want = c.run(reference, in_ref);
    if (got.size() != want.size()) {
      out.message = std::to_string(got.size()) + " results, the reference's " + std::to_string(want.size());
      return out;
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      const std::string diff = compare_result(got[i], want[i], c.tol);
      if (!diff.empty()) {
        out.message = "result " + std::to_string(i) + ": " + diff;
        return out;
      }
    }
    out.passed = true;
  } catch (const minitorch::NotImplemented& e) {
    out.kernels = recorder.called();
    out.not_implemented = true;
    out.message = e.what();
  }
  return out;
}

}  // namespace backend_ops
