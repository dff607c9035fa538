// The key table's precision (bf16, fp16), optimizer and scheduler keys (runtime/config_key_rows.h says how
// rows are written).
#include "runtime/config_key_rows.h"

namespace minitorch::runtime::key_rows {

namespace {
constexpr std::string_view kWarmup = R"({"scheduler": {"type": "WarmupLR"}})";
constexpr std::string_view kCosine = R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 10}}})";
}  // namespace

std::span<const ConfigKey> precision_rows() {
  static constexpr ConfigKey rows[] = {
      // ---- precision (DeepSpeedBF16Config, DeepSpeedFP16Config) ----
      ok("bf16", "{}").ds("{}"),
      dep("bfloat16", "{}", "bf16"),
      ok("bf16.enabled", "true").ds("false"),
      noop("bf16.immediate_grad_update", "true", "it tunes DeepSpeed's BF16 optimizer; AdamW keeps f32 masters anyway").ds("false")
          .what("its BF16 optimizer: apply gradients as they arrive"),
      noop("bf16.check_grad_overflow", "true",
           "minitorch's bf16 step never checks the gradients for inf/nan: DeepSpeed (true, its default) would skip such a step, "
           "minitorch applies it").ds("true")
          .what("skip a bf16 step whose gradients hold inf/nan (its default); minitorch's bf16 step does not check"),
      todo("bf16.bf16_master_weights_and_grads", "true", "false", "bf16 master weights and gradients",
           "minitorch keeps f32 master weights: set it to false").ds("false"),
      todo("bf16.bf16_optimizer_states", "true", "false", "bf16 optimizer states",
           "AdamW's m and v are f32 here: set it to false").ds("false"),
      ok("fp16", "{}").ds("{}"),
      ok("fp16.enabled", "true").ds("false"),  // f16 parameters and gradients, f32 masters, runtime/loss_scaler.h
      ok("fp16.loss_scale", "0").ds("0").type(T::number).ge(0),
      ok("fp16.initial_scale_power", "16").ds("16").ge(0, 64),  // DeepSpeed: any int (departure)
      ok("fp16.loss_scale_window", "1000").ds("1000"),          // > 0 when the scale is dynamic
      ok("fp16.hysteresis", "2").ds("2").ge(1),                  // DeepSpeed: any int (departure)
      ok("fp16.min_loss_scale", "1").ds("1"),                    // > 0 when the scale is dynamic
      ok("fp16.consecutive_hysteresis", "false").ds("false"),
      noop("fp16.auto_cast", "false", "minitorch casts nothing: the model's inputs are token ids and its parameters are f16 already").ds("false")
          .what("cast the model's inputs to fp16 (minitorch's inputs are token ids; the parameters are f16 already)"),
      todo("fp16.fp16_master_weights_and_grads", "true", "false", "fp16 master weights and gradients",
           "minitorch keeps f32 master weights: set it to false").ds("false"),
  };
  return rows;
}

std::span<const ConfigKey> optimizer_and_scheduler_rows() {
  static constexpr ConfigKey rows[] = {
      // ---- optimizer (runtime/config.py; Adam's params: FusedAdam's signature) ----
      ok("optimizer", R"({"type": "AdamW"})").ds("null"),
      ok("optimizer.type", R"("AdamW")").ds("null"),
      noop("optimizer.legacy_fusion", "false", "it selects a DeepSpeed fused kernel").ds("false")
          .what("its legacy fused kernel"),
      ok("optimizer.params", "{}").ds("{}"),
      ok("optimizer.params.lr", "0.001").ds("0.001").ge(0),
      ok("optimizer.params.betas", "[0.9, 0.95]").ds("[0.9, 0.999]"),
      ok("optimizer.params.eps", "1e-8").ds("1e-08").ge(0),
      ok("optimizer.params.weight_decay", "0.1").ds("0.0").ge(0),
      ok("optimizer.params.adam_w_mode", "true").ds("true"),
      ok("optimizer.params.momentum", "0.9", R"({"optimizer": {"type": "SGD"}})").ds("0").ge(0),
      noop("optimizer.params.torch_adam", "true", "it picks torch.optim.AdamW over FusedAdam: the same update").ds("false")
          .what("torch.optim.AdamW instead of FusedAdam"),
      noop("optimizer.params.set_grad_none", "true", "minitorch's zero_grad always frees the gradients").ds("true")
          .what("FusedAdam: set gradients to None in zero_grad"),
      todo("optimizer.params.bias_correction", "false", "true", "Adam without bias correction",
           "minitorch's AdamW always corrects the bias: remove it or set it to true").ds("true"),
      todo("optimizer.params.amsgrad", "true", "false", "AMSGrad", "set it to false").ds("false"),
      todo("optimizer.params.max_grad_norm", "1.0", "0.0", "optimizer.params.max_grad_norm",
           "DeepSpeed refuses it too ('max_grad_norm' is not supported as an optimizer parameter): use the top-level "
           "\"gradient_clipping\"").ds("null").type(T::number),
      // ---- scheduler (lr_schedules.py) ----
      ok("scheduler", R"({"type": "WarmupLR"})").ds("null"),
      ok("scheduler.type", R"("WarmupLR")").ds("null"),
      ok("scheduler.params", "{}", kWarmup).ds("{}"),
      ok("scheduler.params.warmup_num_steps", "10", kWarmup).ds("1000").ge(1),
      ok("scheduler.params.warmup_type", R"("linear")", kWarmup).ds(R"("log")"),
      ok("scheduler.params.warmup_min_lr", "0.0", kWarmup).ds("0.0").ge(0),
      ok("scheduler.params.warmup_max_lr", "0.001", kWarmup).ds("null").ge(0),  // null: the optimizer's lr (WarmupLR)
      ok("scheduler.params.warmup_min_ratio", "0.1", kCosine).ds("0.0").ge(0, 1),
      ok("scheduler.params.cos_min_ratio", "0.01", kCosine).ds("0.0001").ge(0, 1),
      ok("scheduler.params.total_num_steps", "100", R"({"scheduler": {"type": "WarmupDecayLR"}})").ds("null").ge(1),
      noop("scheduler.params.last_batch_iteration", "-1", "the schedule follows the engine's step (--resume restores it)",
           kAllStages, kWarmup).ds("-1")
          .what("step to resume the schedule from"),
  };
  return rows;
}

}  // namespace minitorch::runtime::key_rows
