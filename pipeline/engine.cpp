// The pipeline engine (engine.h): compute is stage_forward and the two engine calls around it;
// communication is the sends and receives of the instruction loop, reduce_tied and send_tied_weight.
#include "pipeline/engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include "autograd/node.h"
#include "minitorch/events.h"
#include "minitorch/not_implemented.h"
#include "minitorch/ops.h"
#include "nn/parameter_names.h"
#include "tp/gpt.h"

namespace minitorch::pipeline {

namespace {
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
/// The trace's name of a forward (F3) or backward (B3) slice; built only while a sink listens.
std::string slice_name(char what, int micro) {
  std::string name;
  if (!events::enabled()) return name;
  name.push_back(what);
  name.append(std::to_string(micro));
  return name;
}

// Message tags on the pipeline group. Between two stages, messages of one tag arrive in the order
// they were sent, and check() proves that every schedule receives in its peer's sending order.
constexpr int kActivationTag = 1, kGradientTag = 2, kTiedGradientTag = 3, kTiedWeightTag = 4;

/// Which stage a GPT parameter belongs to (the tied weight: the first; the last stage holds a copy).
bool on_stage(const std::string& name, const StagePlan& p) {
  const nn::ParameterPlace place = nn::parameter_place(name);
  switch (place.part) {
    case nn::ModelPart::embeddings: return p.embeddings;
    case nn::ModelPart::block: return place.block >= p.first_block && place.block < p.end_block;
    case nn::ModelPart::final_norm:
    case nn::ModelPart::head: return p.head;
  }
  return false;
}
}  // namespace

/// One micro-batch on this stage, from its load / receive to its backward.
struct PipelineEngine::Micro {
  data::Batch batch;   ///< tokens (first stage) and targets (last stage)
  Tensor input;        ///< the received activation (B, T, C), a leaf whose grad goes back (not the first stage)
  Tensor output;       ///< (B, T, C) sent on, or the scalar loss (last stage)
  Tensor grad_output;  ///< the received gradient of output (not the last stage)
};

PipelineEngine::PipelineEngine(std::shared_ptr<nn::GPT> model, const runtime::Config& config, dist::ProcessGroup& world)
    : PipelineEngine(model, config, runtime::plan_on_model_device(config, *model), world) {}

PipelineEngine::PipelineEngine(std::shared_ptr<nn::GPT> model, const runtime::Config& config, const runtime::Plan& run,
                               dist::ProcessGroup& world)
    : model_(std::move(model)),
      config_(config),
      world_(world),
      grid_(dist::make_grid(world, static_cast<int>(config.pipeline.stages), run.grid.tensor)) {
  const int P = grid_.stages;
  // Tensor parallelism: this rank's slices of every block (the other stages' are released below).
  if (grid_.tp_size > 1) model_ = std::make_shared<tp::TensorParallelGPT>(*model_, *grid_.tensor);
  plan_ = partition_gpt(model_->config(), P, config_.pipeline.partition_method);
  schedule_ = make_schedule(config_.pipeline.schedule, P, static_cast<int>(config_.gradient_accumulation_steps));
  check(schedule_);
  const StagePlan& p = plan();
  for (const auto& [name, t] : model_->named_parameters()) {
    const bool tied = nn::is_tied_embedding(name);
    if (on_stage(name, p)) trained_.emplace_back(name, t);
    if (on_stage(name, p) || (tied && p.head)) held_.emplace_back(name, t);
    if (tied && (p.embeddings || p.head) && P > 1) tied_ = t;
  }
  grid_.pipe->set_timeout(config_.comm.timeout_s);
  // The end stages sum the tied gradient between their last backward and the data-parallel reduction.
  engine_ = std::make_unique<runtime::Engine>(model_, config_, run, grid_.data.get(),
                                           runtime::PipelineStagePart{trained_, grid_.pipe.get(), tied_.defined()});
  // Other stages' parameters: only their shapes stay (a read would throw, naming the parameter).
  for (auto& [name, t] : model_->named_parameters())
    if (std::none_of(held_.begin(), held_.end(), [&name = name](const auto& h) { return h.first == name; }))
      t.release_data();
  busy_sum_.assign(P, 0);
  idle_sum_.assign(P, 0);
  peak_live_.assign(P, 0);
  step_bytes_.assign(3, 0);
}

// ---- compute: this stage's share of the GPT ----

// first stage: idx (B, T) i32 -> embed; others: the received (B, T, C). Then blocks [first, end).
// Last stage: head and the loss (a scalar); others return x (B, T, C).
Tensor PipelineEngine::stage_forward(Micro& mb) const {
  const StagePlan& p = plan();
  Tensor x = p.embeddings ? model_->embed(mb.batch.x) : mb.input;
  x = model_->run_blocks(x, p.first_block, p.end_block);
  return p.head ? model_->loss_of_logits(model_->head(x), mb.batch.y) : x;
}

// ---- the instruction loop ----

/// One optimizer step in flight on this stage: the micro-batches alive, and what the step measures.
struct PipelineEngine::Step {
  std::int64_t index = 0, micro_batches = 0;  ///< the optimizer step (0-based), M
  Shape act_shape;                            ///< (B, T, C): what crosses a stage boundary
  DType act_dtype = DType::f32;
  Clock::time_point t0;                       ///< the phase's start, the same moment on every stage
  std::map<int, Micro> live;
  int alive = 0, peak = 0;
  std::int64_t backwards = 0;
  double busy = 0, phase_end = 0, loss_sum = 0;
};

float PipelineEngine::train_batch(const data::BatchSampler& sampler) {
  Step st;
  st.index = engine_->global_steps();
  st.micro_batches = config_.gradient_accumulation_steps;
  st.act_shape = {sampler.batch_size(), sampler.block_size(), model_->config().n_embd};
  st.act_dtype = held_.front().second.dtype();
  {  // every stage starts the phase together: the clock of the bubble measurement
    dist::NoRecordScope quiet(*grid_.pipe);
    grid_.pipe->barrier();
  }
  st.t0 = Clock::now();
  act_bytes_ = grad_bytes_ = tied_bytes_ = 0;
  for (const Instruction& in : schedule_[static_cast<std::size_t>(stage())]) {
    Micro* mb = in.micro >= 0 ? &st.live[in.micro] : nullptr;
    switch (in.op) {
      case Op::load:
        mb->batch = engine_->on_device(
            sampler.sample(grid_.dp_rank, st.index, grid_.dp_size, in.micro, st.micro_batches));
        break;
      case Op::recv_act: recv_activation(*mb, in.peer, st); break;
      case Op::forward: forward(*mb, in.micro, st); break;
      case Op::send_act: send_activation(*mb, in.peer); break;
      case Op::recv_grad: recv_gradient(*mb, in.peer); break;
      case Op::backward: backward(*mb, in.micro, st); break;
      case Op::send_grad:  // then the micro-batch is done here
        send_gradient(*mb, in.peer);
        st.live.erase(in.micro);
        break;
      case Op::reduce_tied: reduce_tied(); break;
      case Op::step:
        finish_sends();
        engine_->step();  // the boundary: data-parallel reduction, global norm, update
        send_tied_weight();
        break;
    }
  }
  record_step(st.busy, st.phase_end, st.peak);
  // The mean loss for the log: the last stage's, averaged over the replicas, then sent to every stage.
  Tensor l = Tensor::full({1}, plan().head ? static_cast<float>(st.loss_sum / static_cast<double>(st.micro_batches)) : 0.f);
  dist::NoRecordScope quiet_data(*grid_.data), quiet_pipe(*grid_.pipe);
  grid_.data->all_reduce(l, dist::ReduceOp::avg);
  grid_.pipe->all_reduce(l, dist::ReduceOp::sum);
  return l.item();
}

// ---- compute: a micro-batch's forward and backward on this stage ----

void PipelineEngine::forward(Micro& mb, int micro, Step& st) {
  // the trace's F<m> slice (only built while a sink listens)
  const events::Span span(events::Category::compute, slice_name('F', micro).c_str(), "", micro);
  const Clock::time_point a = Clock::now();
  mb.output = engine_->run_forward(micro, [&] { return stage_forward(mb); });
  if (plan().head) st.loss_sum += mb.output.item();
  st.busy += ms_between(a, Clock::now());
  st.peak = std::max(st.peak, ++st.alive);
}

void PipelineEngine::backward(Micro& mb, int micro, Step& st) {
  const events::Span span(events::Category::compute, slice_name('B', micro).c_str(), "", micro);
  const Clock::time_point a = Clock::now();
  // the last stage seeds its loss with loss_scale / M, the others with the received gradient
  const Tensor seed = plan().head
                          ? Tensor::full(mb.output.shape(), engine_->loss_gradient(), DType::f32, mb.output.device())
                          : mb.grad_output;
  engine_->run_backward(micro, mb.output, seed);
  const Clock::time_point b = Clock::now();
  st.busy += ms_between(a, b);
  st.phase_end = ms_between(st.t0, b);
  --st.alive;
  if (++st.backwards < st.micro_batches) engine_->count_micro_step();  // the M-th is Op::step
  mb.output = Tensor();  // this micro-batch's activations go
  mb.grad_output = Tensor();
  if (stage() == 0) st.live.erase(micro);
}

// ---- communication: activations forward, their gradients backward ----

void PipelineEngine::recv_activation(Micro& mb, int peer, const Step& st) {
  // from stage s-1, into a comm buffer that backward will differentiate to
  // BEGIN SOLUTION L09.3
  TagScope scope(MemTag::comm);
  mb.input = Tensor::empty(st.act_shape, st.act_dtype, engine_->device());
  grid_.pipe->recv(mb.input, peer, kActivationTag);
  mb.input.set_requires_grad(true);
  // END SOLUTION
}

void PipelineEngine::send_activation(Micro& mb, int peer) {
  // to stage s+1, not waiting: sends_ keeps the tensor alive until the step
  // BEGIN SOLUTION L09.3
  sends_.emplace_back(grid_.pipe->isend(mb.output, peer, kActivationTag), mb.output);
  act_bytes_ += static_cast<std::int64_t>(mb.output.nbytes());
  // END SOLUTION
}

void PipelineEngine::recv_gradient(Micro& mb, int peer) {
  // dL/d(this stage's output), from stage s+1
  // BEGIN SOLUTION L09.3
  TagScope scope(MemTag::comm);
  mb.grad_output = Tensor::empty(mb.output.shape(), mb.output.dtype(), mb.output.device());
  grid_.pipe->recv(mb.grad_output, peer, kGradientTag);
  // END SOLUTION
}

void PipelineEngine::send_gradient(Micro& mb, int peer) {
  // dL/d(this stage's input), to stage s-1
  // BEGIN SOLUTION L09.3
  Tensor g = mb.input.grad();
  sends_.emplace_back(grid_.pipe->isend(g, peer, kGradientTag), g);
  grad_bytes_ += static_cast<std::int64_t>(g.nbytes());
  // END SOLUTION
}

// ---- communication: the tied weight between the end stages ----

void PipelineEngine::reduce_tied() {
  if (!tied_.defined()) return;
  const int last = stages() - 1;
  if (stage() == last) {  // its head's gradient goes to the first stage, which owns the weight
    Tensor g = tied_.grad().defined() ? tied_.grad() : Tensor::zeros(tied_.shape(), tied_.dtype(), tied_.device());
    grid_.pipe->send(g, 0, kTiedGradientTag);
    tied_bytes_ += static_cast<std::int64_t>(g.nbytes());
    tied_.set_grad(Tensor());
  } else {  // first stage: its embedding's gradient + the head's, before the data-parallel reduction
    Tensor head_grad;
    {
      TagScope scope(MemTag::comm);
      head_grad = Tensor::empty(tied_.shape(), tied_.dtype(), tied_.device());
    }
    grid_.pipe->recv(head_grad, last, kTiedGradientTag);
    Tensor g = tied_.grad();
    ops::add_(g, head_grad);
  }
}

void PipelineEngine::send_tied_weight() {
  if (!tied_.defined()) return;
  const int last = stages() - 1;
  if (stage() == 0) {
    grid_.pipe->send(tied_, last, kTiedWeightTag);  // buffered: the weight may change at once
    tied_bytes_ += static_cast<std::int64_t>(tied_.nbytes());
  } else {
    grid_.pipe->recv(tied_, 0, kTiedWeightTag);  // the last stage's copy, updated
  }
}

void PipelineEngine::finish_sends() {
  for (auto& [work, tensor] : sends_) work->wait();
  sends_.clear();
}

// ---- measurement (docs/report.md, `pipeline`) ----

void PipelineEngine::record_step(double busy_ms, double phase_end_ms, int peak_live) {
  const int P = stages();
  dist::ProcessGroup& pipe = *grid_.pipe;
  dist::NoRecordScope quiet(pipe);
  Tensor times = pipe.all_gather(Tensor::from_vector({static_cast<float>(busy_ms), static_cast<float>(phase_end_ms)}, {2}), 2 * P);
  Tensor counts = pipe.all_gather(
      Tensor::from_ints({peak_live, static_cast<std::int32_t>(act_bytes_), static_cast<std::int32_t>(grad_bytes_),
                         static_cast<std::int32_t>(tied_bytes_)}, {4}), 4 * P);
  const std::vector<float> t = times.to_vector();
  const std::vector<std::int32_t> c = counts.to_int_vector();
  double span = 0, busy_total = 0;
  for (int k = 0; k < P; ++k) span = std::max(span, static_cast<double>(t[2 * k + 1]));
  std::fill(step_bytes_.begin(), step_bytes_.end(), 0);
  for (int k = 0; k < P; ++k) {
    peak_live_[k] = std::max(peak_live_[k], c[4 * k]);
    for (int b = 0; b < 3; ++b) step_bytes_[b] += static_cast<std::int64_t>(c[4 * k + 1 + b]) * grid_.dp_size;
  }
  if (++steps_ == 1) return;  // the first step pays the warm-up (allocation, first touches)
  ++measured_;
  for (int k = 0; k < P; ++k) {
    busy_sum_[k] += t[2 * k];
    idle_sum_[k] += span - t[2 * k];
    busy_total += t[2 * k];
  }
  bubble_sum_ += span > 0 ? 1.0 - busy_total / (P * span) : 0.0;
}

PipelineMeasure PipelineEngine::measure() const {
  PipelineMeasure m;
  const int P = stages();
  const double n = static_cast<double>(std::max<std::int64_t>(measured_, 1));
  for (int k = 0; k < P; ++k) m.stages.push_back({busy_sum_[k] / n, idle_sum_[k] / n, peak_live_[k]});
  m.bubble_measured = bubble_sum_ / n;
  m.bubble_formula = bubble_formula(P, static_cast<int>(config_.gradient_accumulation_steps));
  m.steps_measured = measured_;
  m.activation_bytes = step_bytes_[0];
  m.gradient_bytes = step_bytes_[1];
  m.tied_bytes = step_bytes_[2];
  return m;
}

// ---- evaluation: forward only, one micro-batch at a time through the stages ----

float PipelineEngine::evaluate(const data::BatchSampler& val_sampler, std::int64_t iters) {
  autograd::NoGradGuard no_grad;
  TagScope scope(MemTag::activation);
  const int P = stages(), s = stage();
  dist::ProcessGroup& pipe = *grid_.pipe;
  dist::NoRecordScope quiet(pipe);  // not part of any step's traffic
  double total = 0;
  for (std::int64_t i = 0; i < iters; ++i) {
    Micro mb;
    mb.batch = engine_->on_device(val_sampler.batch(static_cast<std::uint64_t>(i)));
    if (s > 0) {
      mb.input = Tensor::empty({val_sampler.batch_size(), val_sampler.block_size(), model_->config().n_embd},
                               held_.front().second.dtype(), engine_->device());
      pipe.recv(mb.input, s - 1, kActivationTag);
    }
    Tensor out = stage_forward(mb);
    if (s < P - 1) pipe.send(out, s + 1, kActivationTag);
    else total += out.item();
  }
  Tensor l = Tensor::full({1}, s == P - 1 ? static_cast<float>(total / static_cast<double>(iters)) : 0.f);
  pipe.all_reduce(l, dist::ReduceOp::sum);
  return l.item();
}

}  // namespace minitorch::pipeline
