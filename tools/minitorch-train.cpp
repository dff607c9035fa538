// minitorch-train --config CONFIG.json [--data TEXT] [--steps N] [--seed S] [--resume CKPT] [--out CKPT]
//                 [--report REPORT.json] [--comm-timeout SECONDS] [--device cpu|sim|cuda|cuda:N]
//                 [--device-memory SIZE]
// Trains a GPT as the DeepSpeed-style config says; prints step, loss, lr, tokens/s with a progress bar
// and the validation loss every eval_interval steps; saves a safetensors checkpoint at the end (ZeRO
// stages 1-3 on several ranks: a directory of per-rank shards, runtime/sharded_checkpoint.h).
// Data parallel: `mpirun -np N minitorch-train --config configs/ddp.json` — every rank trains on its own
// micro-batches (DDP), rank 0 prints and saves, the others are silent. An error on any rank ends the
// whole job with that rank's message. Without mpirun it is one rank (MPI singleton).
// --trace DIR records every rank's events and writes DIR/trace.json (Chrome trace format, docs/trace.md),
// DIR/frames.json (docs/frames.md) and DIR/trace.html; a pipeline run: trace.json and its trace.html only.
// --report writes the run report (docs/report.md): losses, memory and traffic per rank, the formulas.
// --comm-timeout (overrides comm.timeout_s, default 300): a rank that waits longer than this for the
// others in one collective or receive ends the job, naming the operation — a stopped rank never hangs it.
// --device cuda trains on the GPUs (one per rank by local rank; cuda:N = GPU N for all): one rank or DDP
// (stage 0), fp32 or bf16; DDP's gradients are averaged by MPI through host buffers. --device sim runs
// everything the CPU runs on a simulated accelerator: its own memory pool (the report's `memory`), a
// capacity (--device-memory 24MiB) beyond which an allocation is a useful out-of-memory error, and every
// host<->device copy counted (docs/design.md §10).
// Exit status: 0 done, 2 usage or configuration error, 1 any other error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "cli_common.h"
#include "device_flag.h"
#include "runtime/out_of_memory.h"
#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "minitorch/parallel.h"
#include "pipeline/engine.h"
#include "pipeline/schedule.h"
#include "runtime/checkpoint.h"
#include "runtime/engine.h"
#include "runtime/report.h"
#include "runtime/save_and_resume.h"
#include "runtime/save_target.h"
#include "runtime/sharded_checkpoint.h"
#include "runtime/step_trace.h"
#include "trace/html_player.h"

using namespace minitorch;

namespace {
std::string progress_bar(std::int64_t done, std::int64_t total, int width = 20) {
  const int filled = total > 0 ? std::clamp(static_cast<int>(width * done / total), 0, width) : width;
  std::string bar = "[" + std::string(static_cast<std::size_t>(width), '.') + "]";  // [####....]
  bar.replace(1, static_cast<std::size_t>(filled), static_cast<std::size_t>(filled), '#');
  return bar;
}

/// The command line's overrides of config values (-1 / empty: keep the config's).
struct Overrides {
  std::int64_t steps = -1, seed = -1, eval_iters = -1;
  std::optional<double> comm_timeout;
  std::int64_t trace_steps = 20;  ///< with --trace: the steps recorded
  std::optional<std::string> device;         ///< --device (else the config's device.type)
  std::optional<std::string> device_memory;  ///< --device-memory (else the config's device.memory)
};

void train(const std::string& config_path, std::string data_path, const Overrides& flags, const std::string& resume,
           std::optional<std::string> out_flag, const std::string& report_path, const std::string& trace_dir) {
  dist::ProcessGroup& world = dist::world();
  runtime::Config cfg = runtime::Config::from_file(config_path, world.size());
  if (world.rank() == 0)
    for (const auto& w : cfg.warnings) tools::warn(w);
  if (flags.steps >= 0) {
    // DeepSpeed's scheduler keeps its own horizon; --steps changes the run's length, not the schedule's.
    const auto& sc = cfg.scheduler;
    const bool decays = sc.type == optim::LRScheduleType::warmup_decay_lr || sc.type == optim::LRScheduleType::warmup_cosine_lr;
    if (world.rank() == 0 && decays && flags.steps != sc.total_num_steps) {
      const optim::LRSchedule sched = optim::make_lr_schedule(sc, static_cast<float>(cfg.optimizer.lr));
      std::ostringstream w;
      w << "--steps " << flags.steps << " does not rescale scheduler.params.total_num_steps (" << sc.total_num_steps
        << "): the learning rate still follows " << sched.describe() << ", so the last step runs at lr "
        << sched.lr_for_update(std::max<std::int64_t>(0, flags.steps - 1)) << "; set total_num_steps to "
        << flags.steps << " in the config to decay over this run";
      tools::warn(w.str());
    }
    cfg.training.steps = flags.steps;
  }
  if (flags.seed >= 0) cfg.training.seed = static_cast<std::uint64_t>(flags.seed);
  if (flags.eval_iters >= 0) cfg.training.eval_iters = flags.eval_iters;
  if (flags.comm_timeout) cfg.comm.timeout_s = *flags.comm_timeout;
  world.set_timeout(cfg.comm.timeout_s);  // the engine sets it too; this covers the traffic before it
  // Before the data and the model: errors come first.
  const Device device = tools::setup_device(cfg.device, flags.device, flags.device_memory);
  if (data_path.empty()) data_path = cfg.training.data.empty() ? "datasets/kjv.txt" : cfg.training.data;
  const std::string out = out_flag ? *out_flag : cfg.training.checkpoint;  // "" = don't save
  const std::string run_id = runtime::new_run_id(world);  // names every save of this run (checkpoint manifest)
  // Stages 1-3 on several ranks shard the optimizer state, and a pipeline splits the model: the save is a
  // directory of shards, one per rank.
  const bool pipelined = cfg.pipeline.stages > 1;
  const bool sharded_save = (cfg.zero.stage >= 1 && world.size() > 1) || pipelined;
  if (world.rank() == 0) {  // found now, not after an hour of training
    if (!out.empty()) {
      tools::ensure_writable(out, "--out", sharded_save);
      // Nothing a minitorch save did not write is ever replaced (runtime/save_target.h).
      const auto kind = sharded_save ? runtime::SaveKind::sharded : runtime::SaveKind::single_file;
      if (std::string problem = runtime::save_target_problem(out, kind); !problem.empty()) throw runtime::ConfigError(problem);
    }
    if (!report_path.empty()) tools::ensure_writable(report_path, "--report");
    if (!trace_dir.empty()) tools::ensure_writable((std::filesystem::path(trace_dir) / "trace.json").string(), "--trace");
  }

  // Tokenizer: a resumed run keeps the checkpoint's vocabulary; a new one learns it from the text.
  runtime::CheckpointInfo info;
  if (!resume.empty()) {
    // An incomplete save is named as such, not as a bad file (read_checkpoint_info locates the save first: after
    // an interrupted save, the complete one beside it; resume_from's warnings say which).
    info = runtime::read_checkpoint_info(resume);
  }
  data::TextDataset ds = resume.empty()
                             ? data::TextDataset::load(data_path, cfg.training.tokenizer, cfg.model.block_size)
                             : data::TextDataset::load(data_path, info.tokenizer, cfg.model.block_size);
  nn::GPTConfig mcfg = runtime::model_config(cfg, ds.tokenizer().vocab_size());

  // The device budget before anything is allocated on it: model states that cannot fit are said at once.
  runtime::check_model_states_fit(runtime::memory_run_for(cfg, mcfg, world.rank()), device, memory_capacity(device));
  Generator init(cfg.training.seed);
  std::shared_ptr<nn::GPT> model;
  {
    TagScope scope(MemTag::param);
    model = std::make_shared<nn::GPT>(mcfg, init);
  }
  model->to(device);  // as deepspeed.initialize moves the model to the rank's device; the engine follows it
  // N > 1 ranks: DDP, rank 0's weights everywhere; with pipeline stages, this rank's stage of the grid.
  std::unique_ptr<pipeline::PipelineEngine> pipe;
  std::unique_ptr<runtime::Engine> whole;
  if (pipelined) pipe = std::make_unique<pipeline::PipelineEngine>(model, cfg, world);
  else whole = runtime::initialize(model, cfg, &world);
  runtime::Engine* engine = pipe ? &pipe->engine() : whole.get();
  if (world.rank() == 0)
    for (const auto& w : engine->warnings()) tools::warn(w);
  if (!resume.empty()) {
    runtime::ResumeInfo resumed = pipe ? pipe->resume(resume) : runtime::resume_from(resume, *engine);
    if (world.rank() == 0)
      for (const auto& w : resumed.warnings) tools::warn(w);
  }

  const std::int64_t B = cfg.train_micro_batch_size_per_gpu, T = mcfg.block_size;
  data::BatchSampler train_sampler(ds.tokens_ptr(data::Split::train), B, T, cfg.training.seed);
  data::BatchSampler val_sampler(ds.tokens_ptr(data::Split::val), B, T, cfg.training.seed + 1);
  // More batches than the validation split holds would only re-read it (for minutes): clamp, and say so.
  const std::int64_t val_windows = ds.size(data::Split::val) / (T + 1);
  const std::int64_t val_batches = std::max<std::int64_t>(1, val_windows / B);
  if (cfg.training.eval_interval > 0 && cfg.training.eval_iters > val_batches) {
    if (world.rank() == 0)
      tools::warn("training.eval_iters " + std::to_string(cfg.training.eval_iters) + " is more than the " +
                  std::to_string(val_batches) + " batches of " + std::to_string(B) + " windows of " +
                  std::to_string(T + 1) + " tokens the validation split holds; evaluating " +
                  std::to_string(val_batches));
    cfg.training.eval_iters = val_batches;
  }
  std::printf("model %s: %.2fM parameters | data %s: %lld train / %lld val tokens, vocab %lld\n",
              mcfg.describe().c_str(), static_cast<double>(model->num_parameters()) / 1e6, data_path.c_str(),
              static_cast<long long>(ds.size(data::Split::train)), static_cast<long long>(ds.size(data::Split::val)),
              static_cast<long long>(ds.tokenizer().vocab_size()));
  std::printf("batch %lld = micro %lld x accumulation %lld x ranks %d | steps %lld | threads %d%s | comm timeout %g s\n",
              static_cast<long long>(cfg.train_batch_size), static_cast<long long>(B),
              static_cast<long long>(cfg.gradient_accumulation_steps), cfg.data_parallel_size,
              static_cast<long long>(cfg.training.steps), num_threads(),
              cfg.bf16 ? " | bf16" : cfg.fp16.enabled ? " | fp16 (loss scaling)" : "",
              world.timeout());
  if (device.is_sim())
    std::printf("device sim (each rank: a simulated accelerator, %s)\n",
                memory_capacity(device) > 0 ? ("capacity " + runtime::format_mib(static_cast<double>(memory_capacity(device)))).c_str()
                                            : "no capacity limit");
  else if (!device.is_cpu())
    std::printf("device %s (rank 0; each rank: --device %s)\n", device.str().c_str(), flags.device ? flags.device->c_str() : cfg.device.type.c_str());
  if (pipe) {
    std::printf("pipeline: %lld stages x %d data-parallel, %s schedule of %lld micro-batches (bubble (P-1)/(M+P-1) = %.3f)",
                static_cast<long long>(cfg.pipeline.stages), cfg.data_parallel_size, cfg.pipeline.schedule.c_str(),
                static_cast<long long>(cfg.gradient_accumulation_steps),
                pipeline::bubble_formula(pipe->stages(), static_cast<int>(cfg.gradient_accumulation_steps)));
    for (const pipeline::StagePlan& p : pipe->plans())
      std::printf("%s blocks [%d, %d)%s%s", &p == &pipe->plans().front() ? " | stages:" : ",", p.first_block, p.end_block,
                  p.embeddings ? " + embeddings" : "", p.head ? " + head" : "");
    std::printf(" (%s)\n", cfg.pipeline.partition_method.c_str());
  }
  std::fflush(stdout);

  // One sink per rank: the trace recorder, when tracing, passes every event on to the report.
  std::optional<runtime::RunReport> report;
  std::optional<trace::TraceRecorder> tracer;
  std::optional<events::Attach> listening;
  if (!report_path.empty()) report.emplace(*engine, &world);
  if (!trace_dir.empty()) tracer.emplace(report ? &*report : nullptr, device);
  if (tracer) listening.emplace(*tracer);
  else if (report) listening.emplace(*report);

  const std::int64_t total = cfg.training.steps, first_step = engine->global_steps();
  const double tokens_per_step = static_cast<double>(cfg.train_batch_size * T);
  bool legend = true;
  auto t_log = std::chrono::steady_clock::now();
  std::int64_t steps_since_log = 0;
  while (engine->global_steps() < total) {
    const auto t_step = std::chrono::steady_clock::now();
    float loss = pipe ? pipe->train_batch(train_sampler) : engine->train_batch(train_sampler);
    const std::int64_t s = engine->global_steps();  // steps done
    if (report)
      report->add_step(s, loss, engine->lr(), engine->last_grad_norm(),
                       std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_step).count());
    ++steps_since_log;
    if (tracer && tracer->recording() && s - first_step >= flags.trace_steps && s < total) {
      // Every recorded event stays in memory until the end (about 5 MB a step for ZeRO-3 on 2 ranks).
      tracer->stop_recording();
      if (world.rank() == 0)
        tools::warn("--trace recorded the first " + std::to_string(flags.trace_steps) + " steps of " +
                    std::to_string(total - first_step) + " (--trace-steps " + std::to_string(flags.trace_steps) +
                    "); the rest of the run is not traced");
    }
    if (s % cfg.training.log_interval == 0 || s == total) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_log).count();
      // fp16: the loss scale now and the overflow steps skipped so far (runtime/loss_scaler.h).
      char scaler[96] = "";
      if (engine->loss_scaler())
        std::snprintf(scaler, sizeof scaler, " | loss scale %g | skipped %lld", engine->loss_scale(),
                      static_cast<long long>(engine->skipped_steps()));
      std::printf("step %5lld/%lld %s loss %.4f | lr %.2e | grad norm %.3f%s | %.0f tok/s\n", static_cast<long long>(s),
                  static_cast<long long>(total), progress_bar(s, total).c_str(), loss, engine->lr(),
                  engine->last_grad_norm(), scaler, tokens_per_step * static_cast<double>(steps_since_log) / secs);
      t_log = std::chrono::steady_clock::now();
      steps_since_log = 0;
    }
    if (cfg.wall_clock_breakdown && s % cfg.steps_per_print == 0) {
      std::printf("%s\n", engine->wall_clock_report(legend).c_str());
      legend = false;
    }
    if (cfg.training.eval_interval > 0 && (s % cfg.training.eval_interval == 0 || s == total)) {
      const float val = pipe ? pipe->evaluate(val_sampler, cfg.training.eval_iters)
                             : engine->evaluate(val_sampler, cfg.training.eval_iters);
      std::printf("step %5lld val loss %.4f\n", static_cast<long long>(s), val);
      if (report) report->add_val(s, val);
      t_log = std::chrono::steady_clock::now();  // evaluation time is not training throughput
    }
    std::fflush(stdout);
  }
  // Its directory was made by ensure_writable before step 1. A sharded save: every rank writes its shard.
  if (!out.empty() && (sharded_save || world.rank() == 0)) {
    if (pipe) pipe->save(out, ds.tokenizer(), run_id);
    else runtime::save_checkpoint(out, *engine, ds.tokenizer(), run_id);
    std::printf("saved %s%s\n", out.c_str(), sharded_save ? (" (" + std::to_string(world.size()) +
                                                              " shards and a manifest)").c_str() : "");
  }
  listening.reset();
  if (tracer && pipe) {  // the schedule's picture: F<m> / B<m> per stage, every send and receive
    const nlohmann::json about = {{"strategy", engine->strategy().name()}, {"zero_stage", cfg.zero.stage},
                                  {"world_size", world.size()}, {"steps", engine->global_steps()},
                                  {"config", config_path}, {"pipeline_stages", pipe->stages()},
                                  {"schedule", cfg.pipeline.schedule},
                                  {"micro_batches", cfg.gradient_accumulation_steps}};
    const std::string path = runtime::write_chrome_trace(trace_dir, *tracer, &world, about);
    if (world.rank() == 0) {
      const pipeline::Timeline predicted = pipeline::simulate(pipeline::make_schedule(
          cfg.pipeline.schedule, pipe->stages(), static_cast<int>(cfg.gradient_accumulation_steps)));
      const std::string page = trace::write_pipeline_html(trace_dir, pipeline::timeline_json(predicted));
      std::printf("wrote %s (open it in https://ui.perfetto.dev or chrome://tracing: a track per rank, F<m> and B<m> "
                  "per micro-batch, arrows from each send to its receive)\n", path.c_str());
      std::printf("wrote %s (open it in a browser: the predicted schedule above the measured step, played)\n"
                  "no frames.json: its per-rank state is one model's shards, and a pipeline's stages hold different "
                  "layers\n", page.c_str());
    }
  } else if (tracer) {
    const nlohmann::json about = {{"strategy", engine->strategy().name()}, {"zero_stage", cfg.zero.stage},
                                  {"world_size", world.size()}, {"steps", engine->global_steps()},
                                  {"config", config_path}};
    const std::string path = runtime::write_step_trace(trace_dir, *tracer, &world, *engine, about);
    if (world.rank() == 0) {
      const std::filesystem::path d(trace_dir);
      std::printf("wrote %s (open it in https://ui.perfetto.dev or chrome://tracing)\n", path.c_str());
      std::printf("wrote %s (the state after each phase) and %s (open it in a browser; or: minitorch-trace %s)\n",
                  (d / "frames.json").c_str(), (d / "trace.html").c_str(), trace_dir.c_str());
    }
  }
  if (report) {
    if (pipe) {
      report->set_section("pipeline", pipe->report_section());
      report->set_rank_field("stage", pipe->stage());
    }
    report->write(report_path);  // collective: every rank sends its part to rank 0
    if (world.rank() == 0) std::printf("wrote %s\n", report_path.c_str());
  }
}
}  // namespace

int main(int argc, char** argv) {
  dist::ProcessGroup& world = dist::init(&argc, &argv);
  if (world.rank() != 0 && !std::freopen("/dev/null", "w", stdout))  // rank 0 speaks for the job
    dist::abort_job("cannot silence stdout");
  cli::Parser parser{"minitorch-train: train a GPT from a DeepSpeed-style config"};
  std::string config, data, resume, report, trace_dir;
  std::optional<std::string> out;
  Overrides flags;
  parser.option("--config", config, "DeepSpeed-style JSON config (configs/*.json)")->required();
  parser.option("--data", data, "UTF-8 text file to train on (default: training.data, else datasets/kjv.txt)");
  parser.option("--steps", flags.steps, "optimizer steps (overrides training.steps)")->check(cli::decimal<std::int64_t>(0));
  parser.option("--seed", flags.seed, "seed for init and batches (overrides training.seed)")->check(cli::decimal<std::int64_t>(0));
  parser.option("--eval-iters", flags.eval_iters, "batches per validation (overrides training.eval_iters; >= 1)")
      ->check(cli::decimal<std::int64_t>(1));
  parser.option("--resume", resume, "checkpoint to continue from: one complete save (CKPT, CKPT.optim, CKPT.manifest.json; or a sharded CKPT/ "
                 "directory), from any number of ranks, any ZeRO stage and any pipeline grid: bit-identical on the "
                 "grid that saved it");
  parser.option("--report", report, "write the run report (JSON, docs/report.md) to this path at the end");
  parser.option("--trace", trace_dir,
                 "record every rank's step trace and write DIR/trace.json (Chrome trace format: Perfetto, "
                 "chrome://tracing; docs/trace.md), DIR/frames.json (the state after each phase; docs/frames.md) and "
                 "DIR/trace.html (its animated player) at the end. Meant for a few steps");
  parser.option("--trace-steps", flags.trace_steps,
                "with --trace: record the first N steps only (default 20); a traced step's events stay in memory "
                "until the end")
      ->check(cli::decimal<std::int64_t>(1));
  parser.option("--out", out, "where to save the checkpoint (overrides training.checkpoint; \"\" = don't save): a file, or a "
                 "directory of shards for ZeRO stages 1-3 on several ranks and for pipelines");
  parser.option("--comm-timeout", flags.comm_timeout,
                 "seconds a rank waits for the others in one collective or receive before it ends the job "
                 "(overrides comm.timeout_s; default 300)")
      ->check(cli::positive_number());
  parser.option("--device", flags.device, tools::kDeviceHelp);
  parser.option("--device-memory", flags.device_memory, tools::kDeviceMemoryHelp);
  return tools::run_tool(parser, argc, argv, [&] {
    try {
      if (parser.given("--trace-steps") && trace_dir.empty())
        throw runtime::ConfigError("--trace-steps says how many steps --trace records; give --trace DIR too");
      train(config, data, flags, resume, out, report, trace_dir);
    } catch (const std::exception& e) {
      // The other ranks would wait for us forever; the job exits with our status.
      if (world.size() > 1) dist::abort_job(e.what(), tools::exit_status_of(e));
      throw;
    }
  });
}
