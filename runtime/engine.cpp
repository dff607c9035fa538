#include "runtime/engine.h"

#include "runtime/run_id.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "autograd/engine.h"
#include "minitorch/events.h"
#include "runtime/out_of_memory.h"
#include "runtime/run_id.h"
#include "gemini/gemini.h"
#include "tp/gpt.h"
#include "zero/make_strategy.h"
#include "zero/step_frames.h"

namespace minitorch::runtime {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Plan plan_on_model_device(const Config& config, const nn::GPT& model) {
  PlanOverrides on_model;
  for (const auto& [name, p] : model.named_parameters()) {
    on_model.device = p.device().str();
    break;
  }
  return make_plan(config, on_model);
}

Engine::Engine(std::shared_ptr<nn::GPT> model, Config config, dist::ProcessGroup* group, PipelineStagePart part)
    : Engine(model, config, plan_on_model_device(config, *model), group, std::move(part)) {}

Engine::Engine(std::shared_ptr<nn::GPT> model, Config config, Plan plan, std::shared_ptr<dist::ProcessGroup> group)
    : Engine(std::move(model), std::move(config), std::move(plan), group.get()) {
  owned_group_ = std::move(group);
}

Engine::Engine(std::shared_ptr<nn::GPT> model, Config config, Plan plan, dist::ProcessGroup* group, PipelineStagePart part)
    : model_(std::move(model)), config_(std::move(config)), plan_(std::move(plan)), part_(std::move(part)), group_(group) {
  const int world = dp_size();
  const auto* split = dynamic_cast<const tp::TensorParallelGPT*>(model_.get());
  if ((split ? split->group().size() : 1) != plan_.grid.tensor)
    throw ConfigError(config_.source + ": the plan splits the model over " + std::to_string(plan_.grid.tensor) +
                      " tensor-parallel ranks but the model given is " +
                      (split ? "split over " + std::to_string(split->group().size()) : std::string("whole")) +
                      "; pass a tp::TensorParallelGPT over the grid's tensor group (pipeline::make_trainer does)");
  if (split) {
    if (!plan_.device.is_cpu())
      throw ConfigError(config_.source + ": tensor_parallel.size " + std::to_string(plan_.grid.tensor) + " on --device " +
                        plan_.device.str() + " is not available yet: tensor parallelism runs on the CPU; use --device cpu");
    tensor_group_ = &split->group();
    tensor_group_->set_timeout(config_.comm.timeout_s);
    norm_excluded_ = split->norm_excluded();
  }
  if (config_.data_parallel_size != world || plan_.grid.data != world)
    throw ConfigError(config_.source + ": the config was read for a data-parallel size of " +
                      std::to_string(config_.data_parallel_size) + " but the process group has " +
                      std::to_string(world) + " ranks; read it with Config::from_file(path, " +
                      std::to_string(world) + ")");
  for (const auto& [name, p] : model_->named_parameters()) {  // as deepspeed.initialize: onto the rank's device
    try {
      if (p.device() != plan_.device) model_->to(plan_.device);
    } catch (const OutOfMemory& e) {
      throw_explained(e);
    }
    break;
  }
  if (plan_.device.is_cuda()) check_device_support();  // sim runs the CPU kernels: everything the CPU runs
  if (config_.optimizer.type != OptimizerType::adamw)
    throw ConfigError(config_.source + ": optimizer '" + config_.optimizer.type_name +
                      "' is not available in the engine yet; use AdamW");
  // Mixed precision: params 2Ψ, grads 2Ψ; AdamW adds f32 master + m + v = 12Ψ.
  if (config_.bf16) model_->to(DType::bf16);
  model_->set_checkpoint_segments(config_.activation_checkpointing.enabled ? config_.activation_checkpointing.segment_size : 0);
  model_->set_checkpoint_on_host(config_.activation_checkpointing.cpu_checkpointing);
  if (config_.fp16.enabled) {
    model_->to(DType::f16);
    scaler_ = std::make_unique<LossScaler>(config_.fp16);
  }
  if (group_) group_->set_timeout(config_.comm.timeout_s);  // before the strategy's first broadcast
  zero::StrategyConfig strategy_config = config_.strategy();
  strategy_config.zero.stage = plan_.zero_stage;  // the stage that runs (the plan's one-rank rule)
  if (config_.zero.offload_optimizer.on_nvme())  // one swap folder per run, its ranks' folders side by side
    strategy_config.swap_run_id = group_ ? new_run_id(*group_) : new_run_id();
  try {
    if (plan_.gemini) {  // Gemini is ZeRO-3 on chunks, a layer above zero/ (docs/design.md §11)
      if (!group_) throw std::invalid_argument("Engine: gemini needs a process group (one rank: a group of 1)");
      strategy_ = std::make_unique<gemini::Gemini>(model_, strategy_config, config_.gemini, *group_);
    } else {
      strategy_ = zero::make_strategy(model_, strategy_config, group_, part_.params.empty() ? nullptr : &part_.params);
    }
  } catch (const OutOfMemory& e) {
    throw_explained(e);
  }
  schedule_ = optim::make_lr_schedule(config_.scheduler, config_.optimizer.lr);
}

// A GPU rank trains what its kernels and the MPI staging cover today: one rank, or DDP (stage 0), in fp32
// or bf16. The rest is refused here, before a step, rather than failing inside one.
void Engine::check_device_support() const {
  const std::string on = "--device " + device().str();
  if (plan_.zero_stage > 0)
    throw ConfigError(config_.source + ": zero_optimization.stage " + std::to_string(plan_.zero_stage) + " on " + on +
                      " is not available yet: the ZeRO stages run on the CPU; use stage 0 (DDP) on the GPU, or --device cpu");
  if (part_.pipeline)
    throw ConfigError(config_.source + ": pipeline stages on " + on + " are not available yet; use --device cpu");
  if (config_.fp16.enabled)
    throw ConfigError(config_.source + ": fp16 on " + on +
                      " is not available: the f16 kernels exist on the CPU only; use bf16 (bf16.enabled) on the GPU");
}

MemoryRun Engine::memory_run() const {
  MemoryRun run = memory_run_for(plan_, config_, model_->config(), dp_rank());
  if (!part_.params.empty()) {  // a pipeline stage: Ψ is what it trains
    run.psi = 0;
    for (const auto& [name, p] : part_.params) run.psi += static_cast<double>(p.numel());
  }
  return run;
}

void Engine::throw_explained(const OutOfMemory& e) const { throw OutOfMemoryError(explain_out_of_memory(e, memory_run())); }

data::Batch Engine::on_device(data::Batch b) const {
  if (device().is_cpu()) return b;
  TransferScope io(TransferPurpose::io);  // the run's input: counted apart from model states
  b.x = b.x.to(device());
  b.y = b.y.to(device());
  return b;
}

Tensor Engine::forward(const Tensor& idx, const Tensor& targets) try {
  return run_forward(micro_in_step(), [&] { return model_->loss(idx, targets); });
} catch (const OutOfMemory& e) {
  throw_explained(e);
}

void Engine::open_step() {
  const bool first = !step_open_;
  step_open_ = true;
  if (first && group_) group_->set_current_step(global_steps_ + 1);  // named by timeouts
  if (first && events::enabled()) {  // a phase marker: the report counts traffic per step from here
    events::Event e;
    e.category = events::Category::phase;
    e.name = "step_begin";
    e.step = global_steps_;
    events::emit(std::move(e));
    if (!framed_start_) {  // the first traced step: the state the run starts from
      framed_start_ = true;
      frame(*strategy_, [&] {
        return trace::FrameNote{"init", "before the first step",
                                "the start: each rank holds what its strategy keeps between steps (" +
                                    strategy_->name() + ")",
                                nullptr};
      });
    }
  }
}

Tensor Engine::run_forward(std::int64_t micro, const std::function<Tensor()>& compute) {
  auto t0 = Clock::now();
  open_step();
  Tensor out;
  {
    events::Span span(events::Category::compute, "forward", "", micro);
    TagScope scope(MemTag::activation);
    out = compute();
  }
  frame(*strategy_, [&] {
    return trace::FrameNote{"forward", "forward",
                            "forward of micro-batch " + std::to_string(micro + 1) + " of " +
                                std::to_string(config_.gradient_accumulation_steps) +
                                ": the loss is computed; its activations stay allocated for the backward",
                            nullptr};
  });
  times_.forward += ms_since(t0);
  return out;
}

float Engine::loss_gradient() const {
  // fp16: the gradients come out × the loss scale, inside f16's range (runtime/loss_scaler.h).
  return static_cast<float>(loss_scale() / static_cast<double>(config_.gradient_accumulation_steps));
}

void Engine::backward(const Tensor& loss) try {
  run_backward(micro_in_step(), loss, Tensor::full(loss.shape(), loss_gradient(), DType::f32, loss.device()));
} catch (const OutOfMemory& e) {
  throw_explained(e);
}

void Engine::run_backward(std::int64_t micro, const Tensor& output, const Tensor& grad_output) {
  auto t0 = Clock::now();
  {
    events::Span span(events::Category::compute, "backward", "", micro);
    // defer_reduction: the boundary backward only accumulates, step() reduces.
    strategy_->begin_backward(is_gradient_accumulation_boundary() && !part_.defer_reduction);
    {
      TagScope scope(MemTag::activation);
      autograd::backward(output, grad_output);
    }
    strategy_->end_backward();
  }
  frame(*strategy_, [&] {
    return trace::FrameNote{"backward", "backward",
                            "backward of micro-batch " + std::to_string(micro + 1) +
                                " done: the gradients hold what this rank has computed and reduced so far",
                            nullptr};
  });
  times_.backward += ms_since(t0);
}

bool Engine::is_gradient_accumulation_boundary() const {
  return (micro_steps_ + 1) % config_.gradient_accumulation_steps == 0;
}

void Engine::count_micro_step() {
  if (is_gradient_accumulation_boundary())
    throw std::logic_error("Engine::count_micro_step: micro-step " + std::to_string(micro_in_step() + 1) + " of " +
                           std::to_string(config_.gradient_accumulation_steps) +
                           " is the accumulation's last; step() must run there");
  ++micro_steps_;
}

bool Engine::step() try {
  auto t0 = Clock::now();
  const bool boundary = is_gradient_accumulation_boundary();
  if (!boundary) {
    count_micro_step();
    times_.step += ms_since(t0);
    return false;
  }
  ++micro_steps_;
  {  // the boundary: its spans end here, before the timers are read
    {  // backward_allreduce: the gradient reduction backward did not hide
      events::Span span(events::Category::comm, "reduce_gradients");
      if (part_.defer_reduction) {  // the whole reduction now: a boundary with no backward in it
        strategy_->begin_backward(true);
        strategy_->end_backward();
      }
      strategy_->reduce_gradients();
    }
    times_.backward_allreduce += ms_since(t0);
    t0 = Clock::now();
    const MemoryStats m = memory_stats(device());  // reduced gradients, not yet updated (docs/design.md §9)
    measured_states_ = {m.current(MemTag::param), m.current(MemTag::grad), m.current(MemTag::optim)};
    if (!device().is_cpu()) {  // the host's share (ZeRO-Offload's master, m, v and staging)
      const MemoryStats h = memory_stats(Device::cpu());
      measured_host_states_ = {h.current(MemTag::param), h.current(MemTag::grad), h.current(MemTag::optim)};
    }
    events::Span span(events::Category::compute, "optimizer_step");
    // DeepSpeed: scheduler.step() follows optimizer.step(), so update k uses lr(k - 1); a skipped
    // (fp16 overflow) step does not step the scheduler.
    const float lr = schedule_.lr_for_update(global_steps_ - skipped_steps_);
    const zero::StepResult r =
        strategy_->step({lr, config_.gradient_clipping, loss_scale(), /*skip_on_overflow=*/scaler_ != nullptr, part_.pipeline,
                         tensor_group_, norm_excluded_});
    last_grad_norm_ = r.norm;
    last_step_skipped_ = r.skipped;
    // Every rank sees the same global norm, so every rank skips, or stops here, together.
    if (scaler_) scaler_->update(/*overflow=*/r.skipped);  // throws at the minimum scale
    if (r.skipped) ++skipped_steps_;
    else if (!std::isfinite(last_grad_norm_) || !std::isfinite(bad_loss_)) throw std::runtime_error(diverged_message());
    bad_loss_ = 0;
    step_open_ = false;
    ++global_steps_;
    if (events::enabled()) {  // the step's traffic ends here: an evaluation after it is not part of it
      events::Event e;
      e.category = events::Category::phase;
      e.name = "step_end";
      e.step = global_steps_ - 1;  // the same 0-based index as its step_begin
      events::emit(std::move(e));
    }
  }
  times_.step += ms_since(t0);
  last_times_ = times_;
  times_ = StepTimes{};
  return true;
} catch (const OutOfMemory& e) {
  throw_explained(e);
}

float Engine::train_batch(const data::BatchSampler& sampler) {
  const std::int64_t G = config_.gradient_accumulation_steps;
  double total = 0;
  for (std::int64_t m = 0; m < G; ++m) {
    open_step();  // the step's traffic counts from here: the first micro-batch's upload is part of it
    data::Batch b = on_device(sampler.sample(dp_rank(), global_steps_, dp_size(), m, G));
    Tensor loss = forward(b.x, b.y);
    const float l = [&] {
      TransferScope io(TransferPurpose::io);  // the loss read back for the log: not model-state traffic
      return loss.to(Device::cpu()).item();
    }();
    if (!std::isfinite(l) && std::isfinite(bad_loss_)) bad_loss_ = l;  // step() stops the run, on every rank
    total += l;
    backward(loss);
    step();
  }
  float mean = static_cast<float>(total / static_cast<double>(G));
  if (group_) {  // the mean over ranks, for the log: not part of the step's gradient traffic
    dist::NoRecordScope not_counted(*group_);
    Tensor l = Tensor::full({1}, mean, DType::f32, group_->device());
    group_->all_reduce(l, dist::ReduceOp::avg);
    mean = l.item();
  }
  return mean;
}

float Engine::evaluate(const data::BatchSampler& val_sampler, std::int64_t iters) try {
  autograd::NoGradGuard no_grad;
  TagScope scope(MemTag::activation);
  TransferScope io(TransferPurpose::io);
  double total = 0;
  for (std::int64_t i = 0; i < iters; ++i) {
    data::Batch b = on_device(val_sampler.batch(static_cast<std::uint64_t>(i)));
    total += model_->loss(b.x, b.y).to(Device::cpu()).item();
  }
  return static_cast<float>(total / static_cast<double>(iters));
} catch (const OutOfMemory& e) {
  throw_explained(e);
}

std::string Engine::diverged_message() const {
  std::ostringstream os;
  os << "step " << global_steps_ + 1 << ": ";
  if (!std::isfinite(bad_loss_)) os << "the loss is " << bad_loss_;
  else os << "the gradient norm is " << last_grad_norm_;
  os << " (training diverged at lr " << optimizer().lr() << "); lower optimizer.params.lr"
     << (config_.gradient_clipping > 0 ? "" : " or set gradient_clipping (e.g. 1.0)");
  return os.str();
}

std::string Engine::wall_clock_report(bool with_legend) const {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(2);
  if (with_legend)
    os << "wall_clock_breakdown legend: forward = loss of every micro-batch of the step (graph recorded); "
          "backward = autograd backward of every micro-batch; backward_allreduce = data-parallel gradient "
          "reduction not hidden under backward: the wait at the boundary for DDP's bucket all-reduces or ZeRO's "
          "reduce-scatters (0 on one rank); step = clipping, lr schedule, optimizer update (ZeRO: of this rank's "
          "shard, then the all-gather of the parameters) and zeroing the gradients\n";
  os << "time (ms) | forward: " << last_times_.forward << " | backward: " << last_times_.backward
     << " | backward_allreduce: " << last_times_.backward_allreduce << " | step: " << last_times_.step;
  return os.str();
}

std::string tensor_parallel_save_problem(const Config& config) {
  return config.source + ": saving or resuming a tensor-parallel run (tensor_parallel.size " +
         std::to_string(config.tensor_parallel.size) +
         ") is not available yet: its checkpoint of each rank's slices is still to be written; train without a save "
         "(--out \"\" or training.checkpoint \"\") and without --resume, or with tensor_parallel.size 1";
}

std::unique_ptr<Engine> initialize(std::shared_ptr<nn::GPT> model, const Config& config,
                                   dist::ProcessGroup* group) {
  return std::make_unique<Engine>(std::move(model), config, group);
}

std::unique_ptr<Engine> initialize(std::shared_ptr<nn::GPT> model, const Config& config, const Plan& plan,
                                   dist::ProcessGroup* group) {
  return std::make_unique<Engine>(std::move(model), config, plan, group);
}

}  // namespace minitorch::runtime
