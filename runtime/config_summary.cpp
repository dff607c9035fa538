/// \file config_summary.cpp
/// Config::summary(): every effective setting, defaults included, so a log shows what actually ran.
#include <sstream>

#include "runtime/config.h"

namespace minitorch::runtime {

namespace {
const char* on_off(bool b) { return b ? "on" : "off"; }
}  // namespace

std::string Config::summary() const {
  std::ostringstream os;
  os << "config " << source << "\n";
  os << "  batch: train_batch_size " << train_batch_size << " = micro " << train_micro_batch_size_per_gpu
     << " x accumulation " << gradient_accumulation_steps << " x data-parallel " << data_parallel_size
     << " (world " << world_size << ", pipeline stages " << pipeline.stages << ")\n";
  os << "  precision: " << (bf16 ? "bf16" : fp16.enabled ? "fp16" : "fp32");
  if (fp16.enabled) {
    if (fp16.dynamic())
      os << " (dynamic loss scale 2^" << fp16.initial_scale_power << ", window " << fp16.loss_scale_window
         << ", hysteresis " << fp16.hysteresis << (fp16.consecutive_hysteresis ? " consecutive" : "") << ", min "
         << fp16.min_loss_scale << "; overflow steps are skipped)";
    else
      os << " (static loss scale " << fp16.loss_scale << ")";
  }
  os << "; gradient_clipping ";
  if (gradient_clipping > 0) os << gradient_clipping;
  else os << "off";
  os << "\n";
  os << "  zero: stage " << zero.stage << ", reduce_bucket_size " << zero.reduce_bucket_size
     << ", allgather_bucket_size " << zero.allgather_bucket_size << ", overlap_comm " << on_off(zero.overlap_comm)
     << ", contiguous_gradients " << on_off(zero.contiguous_gradients) << ", reduce_scatter "
     << on_off(zero.reduce_scatter) << ", allgather_partitions " << on_off(zero.allgather_partitions) << "\n";
  if (zero.stage == 3)
    os << "  zero-3: stage3_prefetch_bucket_size " << zero.stage3_prefetch_bucket_size
       << ", stage3_param_persistence_threshold " << zero.stage3_param_persistence_threshold << "\n"
       << "  zero-3 optimizer: sub_group_size " << zero.sub_group_size
       << " (the step updates the shard in tiles of at most this many elements: a bound on its f32 temporaries, "
          "not a communication setting)\n";
  os << "  offload: optimizer " << zero.offload_optimizer.device << ", param " << zero.offload_param.device << "\n";
  const char* opt = optimizer.type == OptimizerType::sgd ? "SGD" : "AdamW";
  os << "  optimizer: " << opt;
  if (!optimizer.specified) os << " (default)";
  else if (optimizer.type_name != opt) os << " (written \"" << optimizer.type_name << "\")";
  os << " lr " << optimizer.lr << ", weight_decay " << optimizer.weight_decay;
  if (optimizer.type == OptimizerType::adamw)
    os << ", betas (" << optimizer.beta1 << ", " << optimizer.beta2 << "), eps " << optimizer.eps;
  else
    os << ", momentum " << optimizer.momentum;
  os << "\n  scheduler: " << optim::make_lr_schedule(scheduler, static_cast<float>(optimizer.lr)).describe() << "\n";
  os << "  model: " << model.name << " (n_layer " << model.n_layer << ", n_head " << model.n_head << ", n_embd "
     << model.n_embd << ", block_size " << model.block_size << ", vocab_size "
     << (model.vocab_size ? std::to_string(model.vocab_size) : std::string("from tokenizer")) << ", bias "
     << on_off(model.bias) << ")\n";
  os << "  training: steps " << training.steps << ", eval every " << training.eval_interval << " x "
     << training.eval_iters << " batches, log every " << training.log_interval << ", seed " << training.seed
     << ", tokenizer " << training.tokenizer << ", data " << (training.data.empty() ? "(default)" : training.data)
     << ", checkpoint " << (training.checkpoint.empty() ? "(none)" : training.checkpoint) << "\n";
  os << "  comm: timeout " << comm.timeout_s << " s\n";
  os << "  pipeline: " << pipeline.stages << " stage(s), schedule " << pipeline.schedule
     << "; activation checkpointing " << on_off(activation_checkpointing.enabled) << "\n";
  os << "  steps_per_print " << steps_per_print << ", wall_clock_breakdown " << on_off(wall_clock_breakdown) << "\n";
  for (const auto& w : warnings) os << "  warning: " << w << "\n";
  return os.str();
}

}  // namespace minitorch::runtime
