// Lesson 02: autograd. build/bin/lesson-02 [--auto] [--quick] [--beat N] (make lesson-02)
// Reverse mode: every op output remembers the op (grad_fn) and its inputs; backward() walks that
// graph from the loss to the leaves, applying the chain rule, and frees the graph as it goes.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "common/beat.h"
#include "minitorch/allocator.h"
#include "nn/layers.h"
#include "nn/module.h"

using namespace minitorch;
namespace ag = minitorch::autograd;

namespace {
// Prints the graph below a node: its name, then one line per edge, indented.
void print_node(const ag::Node& node, int depth) {
  std::printf("%*s%s -> %s\n", 2 * depth, "", node.name(), shape_str(node.output_shape).c_str());
  for (const ag::Edge& e : node.next_edges) {
    if (e.producer) print_node(*e.producer, depth + 1);
    else if (e.leaf) std::printf("%*sleaf '%s' %s\n", 2 * depth + 2, "", e.leaf->name.c_str(), shape_str(e.shape).c_str());
    else std::printf("%*s(an input that needs no gradient: no edge)\n", 2 * depth + 2, "");
  }
}
// Prints the graph behind `t`.
void print_graph(const Tensor& t) {
  if (t.is_leaf()) std::printf("leaf '%s' %s\n", t.name().c_str(), t.describe().c_str());
  else print_node(*t.grad_fn(), 0);
}
std::string vec_str(const Tensor& t) {
  std::string s = "[";
  char buf[32];
  for (float v : t.to_vector()) {
    std::snprintf(buf, sizeof buf, " %f", static_cast<double>(v));
    s += buf;
  }
  return s + " ]";
}

// y = tanh(sum(w * x) + b): the lesson's tiny graph. w (3), x (3), b (1) -> y (1)
Tensor tiny(const Tensor& w, const Tensor& x, const Tensor& b) {
  return ag::tanh(ag::add(ag::sum(ag::mul(w, x)), b));
}

// A 3-layer MLP: x (N, in) -> fc1 -> tanh -> fc2 -> tanh -> fc3 -> (N, out)
struct MLP : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
  MLP(std::int64_t in, std::int64_t hidden, std::int64_t out, Generator& gen) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(in, hidden, true, gen, 0.3f));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, hidden, true, gen, 0.1f));
    fc3 = register_module("fc3", std::make_shared<nn::Linear>(hidden, out, true, gen, 0.1f));
  }
  Tensor forward(const Tensor& x) const {
    return fc3->forward(ag::tanh(fc2->forward(ag::tanh(fc1->forward(x)))));
  }
};
long long kib(std::int64_t bytes) { return static_cast<long long>(bytes / 1024); }
}  // namespace

// What the beats hand on: the tiny graph's tensors, the random stream and the small MLP.
struct State {
  Tensor w, b, x, y;
  Generator gen{1337};
  std::unique_ptr<MLP> mlp;
};

void a_tiny_graph(lesson::Beats& beats, State& s) {
  beats.beat("a tiny graph: y = tanh(w.x + b)",
             "Leaves (w, b) are marked requires_grad. Each op's output holds grad_fn, the node that\n"
             "knows how to turn dL/d(output) into dL/d(inputs). x needs no gradient, so it has no edge.");
  s.w = Tensor::from_vector({0.5f, -0.3f, 0.8f}, {3}).set_requires_grad();  // (3)
  s.b = Tensor::from_vector({0.1f}, {1}).set_requires_grad();               // (1)
  s.x = Tensor::from_vector({1.f, 2.f, 3.f}, {3});                          // (3), a constant
  Tensor &w = s.w, &b = s.b, &x = s.x;
  w.set_name("w"), b.set_name("b"), x.set_name("x");
  s.y = tiny(w, x, b);  // (1)
  const Tensor& y = s.y;
  std::printf("y = %.6f   (w.x + b = %.2f)\n", static_cast<double>(y.item()), 0.5 - 0.6 + 2.4 + 0.1);
  print_graph(y);
}

void backward_the_chain_rule_node_by_node(lesson::Beats& beats, State& s) {
  beats.beat("backward: the chain rule, node by node",
             "backward(y) seeds dy/dy = 1 and walks the graph in reverse topological order.\n"
             "By hand: dy/dz = 1 - y^2 (z = w.x + b), so dy/dw = (1 - y^2) x and dy/db = 1 - y^2.");
  const Tensor &w = s.w, &b = s.b, &y = s.y;
  ag::backward(y);
  const float d = 1.f - y.item() * y.item();
  std::printf("w.grad() = %s\n   by hand  [ %f %f %f ]\n", vec_str(w.grad()).c_str(), static_cast<double>(d * 1),
              static_cast<double>(d * 2), static_cast<double>(d * 3));
  std::printf("b.grad() = %s\n   by hand  [ %f ]\n", vec_str(b.grad()).c_str(), static_cast<double>(d));
}

void check_it_against_finite_differences(lesson::Beats& beats, State& s) {
  beats.beat("check it against finite differences",
             "The derivative is the slope: (f(w + eps) - f(w - eps)) / 2eps, error O(eps^2).\n"
             "autograd::gradcheck does this for every element of every input of any function.");
  Tensor &w = s.w, &b = s.b, &x = s.x;
  {
    ag::NoGradGuard no_grad;  // the nudged forwards need no graph
    const float eps = 1e-2f;
    for (std::int64_t i = 0; i < 3; ++i) {
      float* wi = w.data<float>() + i;
      const float saved = *wi;
      *wi = saved + eps;
      const double up = tiny(w, x, b).item();
      *wi = saved - eps;
      const double down = tiny(w, x, b).item();
      *wi = saved;
      std::printf("dy/dw[%lld]: numeric %.6f   autograd %.6f\n", static_cast<long long>(i), (up - down) / (2 * eps),
                  static_cast<double>(w.grad().at({i})));
    }
  }
  Generator& gen = s.gen;
  auto layer = [](const std::vector<Tensor>& in) { return ag::tanh(ag::linear(in[0], in[1], in[2])); };
  std::vector<Tensor> inputs = {Tensor::randn({4, 5}, gen),                       // x (4, 5)
                                Tensor::randn({3, 5}, gen).set_requires_grad(),   // W (3, 5)
                                Tensor::randn({3}, gen).set_requires_grad()};     // b (3)
  ag::GradcheckResult r = ag::gradcheck(layer, inputs);
  std::printf("gradcheck(tanh(linear(x, W, b))): %s, max |analytic - numeric| = %.2e\n%s", r.ok ? "ok" : "FAILED",
              r.max_abs_error, r.report.c_str());
}

void gradients_accumulate_zero_grad_clears_them(lesson::Beats& beats, State& s) {
  beats.beat("gradients accumulate; zero_grad clears them",
             "backward() adds into .grad (as PyTorch does): two backwards give twice the gradient.\n"
             "That is gradient accumulation. zero_grad() sets the gradients to none before the next step.\n"
             "A graph is freed by its backward: a second backward through it is an error.");
  Tensor &w = s.w, &b = s.b, &x = s.x, &y = s.y;
  std::printf("after 1 backward: b.grad() = %s\n", vec_str(b.grad()).c_str());
  ag::backward(tiny(w, x, b));  // a fresh graph, same values: adds the same gradient again
  std::printf("after 2 backwards: b.grad() = %s  (doubled)\n", vec_str(b.grad()).c_str());
  try {
    ag::backward(y);  // y's graph was freed by the first backward
  } catch (const std::runtime_error& e) {
    std::printf("backward(y) again throws: %s\n", e.what());
  }
  w.set_grad(Tensor()), b.set_grad(Tensor());  // what Module::zero_grad() does to every parameter
  std::printf("after zero_grad: w.grad() defined? %s\n", w.grad().defined() ? "yes" : "no");
}

void gradient_hooks_fire_in_reverse_order_of_use(lesson::Beats& beats, State& s) {
  beats.beat("gradient hooks fire in reverse order of use",
             "A hook on a leaf runs as soon as that leaf's gradient is final, while backward goes on.\n"
             "The last layer's gradients are ready first: DDP starts all-reducing them from this hook\n"
             "while the earlier layers are still in backward (communication hidden under compute).");
  Generator& gen = s.gen;
  s.mlp = std::make_unique<MLP>(16, 32, 4, gen);
  MLP& mlp = *s.mlp;
  std::vector<std::string> order;
  std::vector<HookHandle> hooks;  // a hook lives as long as its handle
  for (auto& [name, p] : mlp.named_parameters()) {
    const std::string n = name;
    // By pointer: a Tensor copy in fc1.weight's own hook would own fc1.weight (a cycle, never freed).
    const Tensor* fc1_w = &mlp.fc1->weight;
    hooks.push_back(p.register_grad_hook([&order, n, fc1_w](Tensor& t) {
      order.push_back(n);
      std::printf("  hook %zu: %-10s grad %-8s |g| = %.4f   fc1.weight still pending: %s\n", order.size(), n.c_str(),
                  shape_str(t.grad().shape()).c_str(), std::sqrt(ops::sum_squares(t.grad())),
                  fc1_w->grad().defined() ? "no" : "yes");
    }));
  }
  std::printf("forward order: fc1, fc2, fc3. backward of mean(mlp(x)):\n");
  ag::backward(ag::mean(mlp.forward(Tensor::randn({8, 16}, gen))));  // x (8, 16) -> (8, 4) -> scalar
}

void no_grad_forward_without_a_graph(lesson::Beats& beats, State& s) {
  beats.beat("no_grad: forward without a graph",
             "Evaluation and sampling need no gradients. Under NoGradGuard ops record nothing, so no\n"
             "activations are kept alive for a backward that will never come.");
  const MLP& mlp = *s.mlp;
  Tensor xs = Tensor::randn({256, 16}, s.gen);  // (256, 16)
  {
    ag::NoGradGuard guard;
    Tensor out = mlp.forward(xs);  // (256, 4)
    std::printf("under no_grad: out.requires_grad() = %s, grad_fn = %s\n", out.requires_grad() ? "true" : "false",
                out.grad_fn() ? out.grad_fn()->name() : "null");
  }
  Tensor out = mlp.forward(xs);
  std::printf("with grad:     out.requires_grad() = %s, grad_fn = %s\n", out.requires_grad() ? "true" : "false",
              out.grad_fn()->name());
  out = Tensor();  // dropping the output drops its graph
}

void memory_backward_frees_the_activations(lesson::Beats& beats, State& s) {
  beats.beat("memory: backward frees the activations",
             "Each node saves what its backward needs (a Linear its input, a tanh its output): that is\n"
             "activation memory, and it is why training needs more memory than inference. backward()\n"
             "releases each node's saved tensors as soon as it has run.");
  Generator& gen = s.gen;
  MLP big(256, 1024, 10, gen);     // 256 -> 1024 -> 1024 -> 10
  Tensor xb = Tensor::randn({512, 256}, gen);  // (512, 256)
  const std::int64_t base = memory_stats().current(MemTag::activation);
  const std::int64_t grad_base = memory_stats().current(MemTag::grad);
  Tensor loss;
  {
    TagScope scope(MemTag::activation);  // everything the forward allocates counts as activation
    {
      ag::NoGradGuard guard;
      Tensor tmp = big.forward(xb);  // (512, 10): the hidden states die as soon as they are used
      std::printf("no_grad forward:  activation bytes held %6lld KiB (its output only)\n",
                  kib(memory_stats().current(MemTag::activation) - base));
    }
    loss = ag::mean(big.forward(xb));  // (512, 1024) hidden states are saved in the graph
  }
  const std::int64_t held = memory_stats().current(MemTag::activation) - base;
  const double hidden = 512.0 * 1024 * 4;  // one (512, 1024) f32 hidden state: 2 MiB
  std::printf("graph forward:    activation bytes held %6lld KiB = %.2f hidden states of (512, 1024) f32\n"
              "                  (per hidden layer the tanh's output, saved by the tanh and by the next Linear:\n"
              "                  one tensor; the Linear's own output died once the tanh had read it)\n",
              kib(held), static_cast<double>(held) / hidden);
  ag::backward(loss);
  std::printf("after backward:   activation bytes held %6lld KiB; grad bytes %lld KiB = 4 x %lld parameters\n",
              kib(memory_stats().current(MemTag::activation) - base),
              kib(memory_stats().current(MemTag::grad) - grad_base), static_cast<long long>(big.num_parameters()));
  std::printf("%s\n", memory_report().c_str());
}

// The lesson: its seven beats in order.
int run(lesson::Beats& beats) {
  State s;
  a_tiny_graph(beats, s);
  backward_the_chain_rule_node_by_node(beats, s);
  check_it_against_finite_differences(beats, s);
  gradients_accumulate_zero_grad_clears_them(beats, s);
  gradient_hooks_fire_in_reverse_order_of_use(beats, s);
  no_grad_forward_without_a_graph(beats, s);
  memory_backward_frees_the_activations(beats, s);
  std::printf("\nLesson 02 done. Next: make lesson-03 (the GPT).\n");
  return 0;
}

int main(int argc, char** argv) {
  return lesson::main_on_one_process(argc, argv, "Lesson 02: autograd", 7, [](lesson::Beats&) {},
                                     [](lesson::Beats& beats) { return run(beats); });
}
