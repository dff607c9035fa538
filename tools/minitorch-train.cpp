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
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include "cli_common.h"
#include "data/text_dataset.h"
#include "dist/process_group.h"
#include "minitorch/parallel.h"
#include "pipeline/make_trainer.h"
#include "runtime/byte_size.h"
#include "runtime/checkpoint.h"
#include "runtime/engine.h"
#include "runtime/out_of_memory.h"
#include "runtime/plan.h"
#include "runtime/report.h"
#include "runtime/save_and_resume.h"
#include "runtime/save_target.h"
#include "tp/memory.h"
#include "tp/vocab.h"

using namespace minitorch;

namespace {
std::string progress_bar(std::int64_t done, std::int64_t total, int width = 20) {
  const int filled = total > 0 ? std::clamp(static_cast<int>(width * done / total), 0, width) : width;
  std::string bar = "[" + std::string(static_cast<std::size_t>(width), '.') + "]";  // [####....]
  bar.replace(1, static_cast<std::size_t>(filled), static_cast<std::size_t>(filled), '#');
  return bar;
}

/// The command line: the files, and its overrides of config values (-1 / nullopt: keep the config's).
struct Flags {
  std::string config, data, resume, report, trace_dir;
  std::optional<std::string> out;
  std::int64_t steps = -1, seed = -1, eval_iters = -1;
  std::optional<double> comm_timeout;
  std::int64_t trace_steps = 20;  ///< with --trace: the steps recorded
  runtime::PlanOverrides plan;    ///< --device, --device-memory
  std::optional<std::string> link_bandwidth;  ///< --link-bandwidth: device.link_bandwidth's value
};

/// The config for this world with the command line's overrides; its warnings said once.
runtime::Config read_config(const Flags& flags, dist::ProcessGroup& world) {
  runtime::Config cfg = runtime::Config::from_file(flags.config, world.size());
  if (world.rank() == 0)
    for (const auto& w : cfg.warnings) tools::warn(w);
  if (flags.link_bandwidth) {  // over device.link_bandwidth (the plan refuses it off sim)
    try {
      cfg.device.link_bandwidth =
          runtime::parse_sim_size(*flags.link_bandwidth, runtime::SimSize::link_bandwidth, "--link-bandwidth");
    } catch (const std::invalid_argument& e) {
      throw runtime::ConfigError(e.what());
    }
  }
  const auto& sc = cfg.scheduler;  // DeepSpeed's scheduler keeps its own horizon: --steps does not rescale it
  const bool decays = sc.type == optim::LRScheduleType::warmup_decay_lr || sc.type == optim::LRScheduleType::warmup_cosine_lr;
  if (flags.steps >= 0 && world.rank() == 0 && decays && flags.steps != sc.total_num_steps) {
    const optim::LRSchedule sched = optim::make_lr_schedule(sc, static_cast<float>(cfg.optimizer.lr));
    std::ostringstream w;
    w << "--steps " << flags.steps << " does not rescale scheduler.params.total_num_steps (" << sc.total_num_steps
      << "): the learning rate still follows " << sched.describe() << ", so the last step runs at lr "
      << sched.lr_for_update(std::max<std::int64_t>(0, flags.steps - 1)) << "; set total_num_steps to " << flags.steps
      << " in the config to decay over this run";
    tools::warn(w.str());
  }
  if (flags.steps >= 0) cfg.training.steps = flags.steps;
  if (flags.seed >= 0) cfg.training.seed = static_cast<std::uint64_t>(flags.seed);
  if (flags.eval_iters >= 0) cfg.training.eval_iters = flags.eval_iters;
  if (flags.comm_timeout) cfg.comm.timeout_s = *flags.comm_timeout;
  world.set_timeout(cfg.comm.timeout_s);  // the engine sets it too; this covers the traffic before it
  return cfg;
}

/// Every file the run will write, checked before step 1 (rank 0): found now, not after an hour of training.
/// Nothing a minitorch save did not write is ever replaced (runtime/save_target.h).
void check_outputs(const Flags& flags, const std::string& out, const runtime::Config& cfg, const runtime::Plan& plan) {
  if (plan.tensor_parallel() && (!out.empty() || !flags.resume.empty()))
    throw runtime::ConfigError(runtime::tensor_parallel_save_problem(cfg));
  if (!out.empty()) {
    tools::ensure_writable(out, "--out", plan.sharded_save());
    if (std::string problem = runtime::save_target_problem(out, plan.save_kind); !problem.empty())
      throw runtime::ConfigError(problem);
  }
  if (!flags.report.empty()) tools::ensure_writable(flags.report, "--report");
  if (!flags.trace_dir.empty())
    tools::ensure_writable((std::filesystem::path(flags.trace_dir) / "trace.json").string(), "--trace");
}

/// The corpus, tokenized: a resumed run keeps the checkpoint's vocabulary; a new one learns it from the text.
data::TextDataset load_data(const runtime::Config& cfg, const std::string& data_path, const std::string& resume) {
  // An incomplete save is named as such, not as a bad file (read_checkpoint_info locates the save first).
  if (resume.empty()) return data::TextDataset::load(data_path, cfg.training.tokenizer, cfg.model.block_size);
  return data::TextDataset::load(data_path, runtime::read_checkpoint_info(resume).tokenizer, cfg.model.block_size);
}

/// More validation batches than the split holds would only re-read it (for minutes): clamped, and said.
void clamp_eval_iters(runtime::Config& cfg, const data::TextDataset& ds, int rank) {
  const std::int64_t B = cfg.train_micro_batch_size_per_gpu, T = cfg.model.block_size;
  const std::int64_t val_batches = std::max<std::int64_t>(1, ds.size(data::Split::val) / (T + 1) / B);
  if (cfg.training.eval_interval <= 0 || cfg.training.eval_iters <= val_batches) return;
  if (rank == 0)
    tools::warn("training.eval_iters " + std::to_string(cfg.training.eval_iters) + " is more than the " +
                std::to_string(val_batches) + " batches of " + std::to_string(B) + " windows of " +
                std::to_string(T + 1) + " tokens the validation split holds; evaluating " + std::to_string(val_batches));
  cfg.training.eval_iters = val_batches;
}

/// The run's opening lines: the model and data, the batch, the device, and what the trainer adds.
void print_summary(const runtime::Config& cfg, const runtime::Plan& plan, const runtime::Trainer& trainer,
                   const data::TextDataset& ds, const std::string& data_path, double timeout) {
  const nn::GPT& model = trainer.engine().model();
  std::printf("model %s: %.2fM parameters | data %s: %lld train / %lld val tokens, vocab %lld\n",
              model.config().describe().c_str(), static_cast<double>(model.model_parameters()) / 1e6, data_path.c_str(),
              static_cast<long long>(ds.size(data::Split::train)), static_cast<long long>(ds.size(data::Split::val)),
              static_cast<long long>(ds.tokenizer().vocab_size()));
  std::printf("batch %lld = micro %lld x accumulation %lld x data ranks %d | steps %lld | threads %d%s | comm timeout %g s\n",
              static_cast<long long>(plan.global_batch), static_cast<long long>(plan.micro_batch),
              static_cast<long long>(plan.accumulation), plan.grid.data, static_cast<long long>(cfg.training.steps),
              num_threads(), plan.precision == runtime::Precision::bf16 ? " | bf16"
                             : plan.precision == runtime::Precision::f16 ? " | fp16 (loss scaling)" : "",
              timeout);
  if (plan.tensor_parallel())  // Megatron's split (tp/): what each rank of a tensor group holds
    std::printf("tensor parallel: grid data %d x pipeline %d x tensor %d | each rank %.3fM parameters (Ψ/t plus the "
                "replicated), vocabulary padded to %lld\n",
                plan.grid.data, plan.grid.pipeline, plan.grid.tensor,
                static_cast<double>(tp::parameters_per_rank(model.config(), plan.grid.tensor)) / 1e6,
                static_cast<long long>(tp::padded_vocab_size(model.config().vocab_size, plan.grid.tensor)));
  if (plan.device.is_sim())
    std::printf("device sim (each rank: a simulated accelerator, %s)\n",
                plan.device_capacity > 0 ? ("capacity " + runtime::format_mib(static_cast<double>(plan.device_capacity))).c_str()
                                         : "no capacity limit");
  else if (!plan.device.is_cpu())
    std::printf("device %s (rank 0; each rank: --device %s)\n", plan.device.str().c_str(), plan.device_name.c_str());
  if (const std::string more = trainer.describe(); !more.empty()) std::printf("%s\n", more.c_str());
  std::fflush(stdout);
}

/// What the run records besides its log: the report and the trace, one event sink per rank (the trace
/// recorder, when tracing, passes every event on to the report).
struct Recorders {
  std::optional<runtime::RunReport> report;
  std::optional<trace::TraceRecorder> tracer;
  std::optional<events::Attach> listening;
  Recorders(const Flags& flags, const runtime::Trainer& trainer, dist::ProcessGroup& world) {
    if (!flags.report.empty()) report.emplace(trainer.engine(), &world);
    if (!flags.trace_dir.empty()) tracer.emplace(report ? &*report : nullptr, trainer.engine().device());
    if (tracer) listening.emplace(*tracer);
    else if (report) listening.emplace(*report);
  }
};

/// The log line of step s (every log_interval steps): loss, lr, gradient norm, fp16's scale, throughput.
void print_step(const runtime::Engine& engine, std::int64_t s, std::int64_t total, float loss, double tokens_per_s) {
  char scaler[96] = "";  // fp16: the loss scale now and the overflow steps skipped so far (runtime/loss_scaler.h)
  if (engine.loss_scaler())
    std::snprintf(scaler, sizeof scaler, " | loss scale %g | skipped %lld", engine.loss_scale(),
                  static_cast<long long>(engine.skipped_steps()));
  std::printf("step %5lld/%lld %s loss %.4f | lr %.2e | grad norm %.3f%s | %.0f tok/s\n", static_cast<long long>(s),
              static_cast<long long>(total), progress_bar(s, total).c_str(), loss, engine.lr(), engine.last_grad_norm(),
              scaler, tokens_per_s);
}

/// Stops the trace after its first --trace-steps steps: every recorded event stays in memory until the end
/// (about 5 MB a step for ZeRO-3 on 2 ranks).
void limit_trace(Recorders& rec, std::int64_t traced, std::int64_t to_go, std::int64_t limit, int rank) {
  if (!rec.tracer || !rec.tracer->recording() || traced < limit || to_go <= 0) return;
  rec.tracer->stop_recording();
  if (rank == 0)
    tools::warn("--trace recorded the first " + std::to_string(limit) + " steps of " + std::to_string(traced + to_go) +
                " (--trace-steps " + std::to_string(limit) + "); the rest of the run is not traced");
}

/// The training loop: a step, its log line, the evaluation when due.
void train_loop(runtime::Trainer& trainer, const runtime::Config& cfg, const data::TextDataset& ds, Recorders& rec,
                std::int64_t trace_steps, int rank) {
  const runtime::Engine& engine = trainer.engine();
  const std::int64_t B = cfg.train_micro_batch_size_per_gpu, T = cfg.model.block_size;
  const data::BatchSampler train_sampler(ds.tokens_ptr(data::Split::train), B, T, cfg.training.seed);
  const data::BatchSampler val_sampler(ds.tokens_ptr(data::Split::val), B, T, cfg.training.seed + 1);
  const std::int64_t total = cfg.training.steps, first_step = engine.global_steps();
  const double tokens_per_step = static_cast<double>(cfg.train_batch_size * T);
  using Clock = std::chrono::steady_clock;
  auto t_log = Clock::now();
  std::int64_t since_log = 0;
  bool legend = true;
  while (engine.global_steps() < total) {
    const auto t_step = Clock::now();
    const float loss = trainer.train_batch(train_sampler);
    const std::int64_t s = engine.global_steps();  // steps done
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t_step).count();
    if (rec.report) rec.report->add_step(s, loss, engine.lr(), engine.last_grad_norm(), ms);
    ++since_log;
    limit_trace(rec, s - first_step, total - s, trace_steps, rank);
    if (s % cfg.training.log_interval == 0 || s == total) {
      const double secs = std::chrono::duration<double>(Clock::now() - t_log).count();
      print_step(engine, s, total, loss, tokens_per_step * static_cast<double>(since_log) / secs);
      t_log = Clock::now();
      since_log = 0;
    }
    if (cfg.wall_clock_breakdown && s % cfg.steps_per_print == 0) {
      std::printf("%s\n", engine.wall_clock_report(legend).c_str());
      legend = false;
    }
    if (cfg.training.eval_interval > 0 && (s % cfg.training.eval_interval == 0 || s == total)) {
      const float val = trainer.evaluate(val_sampler, cfg.training.eval_iters);
      std::printf("step %5lld val loss %.4f\n", static_cast<long long>(s), val);
      if (rec.report) rec.report->add_val(s, val);
      t_log = Clock::now();  // evaluation time is not training throughput
    }
    std::fflush(stdout);
  }
}

/// After the last step: the save (its directory was made by check_outputs), the trace, the report.
void finish(runtime::Trainer& trainer, Recorders& rec, const Flags& flags, const std::string& out,
            const data::Tokenizer& tokenizer, const std::string& run_id, dist::ProcessGroup& world) {
  const runtime::Engine& engine = trainer.engine();
  if (!out.empty()) {
    trainer.save(out, tokenizer, run_id);
    std::printf("saved %s%s\n", out.c_str(), engine.plan().sharded_save()
                                                ? (" (" + std::to_string(world.size()) + " shards and a manifest)").c_str()
                                                : "");
  }
  rec.listening.reset();
  if (rec.tracer) {
    const nlohmann::json about = {{"strategy", engine.strategy().name()}, {"zero_stage", engine.plan().zero_stage},
                                  {"world_size", world.size()}, {"steps", engine.global_steps()},
                                  {"config", flags.config}};
    for (const std::string& line : trainer.write_trace(flags.trace_dir, *rec.tracer, &world, about))
      std::printf("%s\n", line.c_str());
  }
  if (rec.report) {
    trainer.add_to_report(*rec.report);
    rec.report->write(flags.report);  // collective: every rank sends its part to rank 0
    std::printf("wrote %s\n", flags.report.c_str());
  }
}

void train(Flags flags) {
  dist::ProcessGroup& world = dist::world();
  runtime::Config cfg = read_config(flags, world);
  runtime::Plan plan = runtime::make_plan(cfg, flags.plan);  // what runs, decided once (runtime/plan.h)
  if (world.rank() == 0)
    for (const auto& w : plan.warnings) tools::warn(w);
  runtime::setup_device(plan);  // before the data and the model: errors come first
  const std::string data_path = !flags.data.empty() ? flags.data : cfg.training.data.empty() ? "datasets/kjv.txt" : cfg.training.data;
  const std::string out = flags.out ? *flags.out : cfg.training.checkpoint;  // "" = don't save
  const std::string run_id = runtime::new_run_id(world);  // names every save of this run (checkpoint manifest)
  if (world.rank() == 0) check_outputs(flags, out, cfg, plan);
  const data::TextDataset ds = load_data(cfg, data_path, flags.resume);
  const nn::GPTConfig mcfg = runtime::model_config(cfg, ds.tokenizer().vocab_size());
  if (world.rank() == 0)
    for (const auto& w : runtime::model_warnings(plan, cfg, mcfg)) tools::warn(w);
  // The device budget before anything is allocated on it: model states that cannot fit are said at once.
  runtime::check_model_states_fit(pipeline::memory_run_for_rank(plan, cfg, mcfg, world.rank()), plan.device,
                                  plan.device_capacity);
  std::shared_ptr<nn::GPT> model;
  {
    Generator init(cfg.training.seed);
    TagScope scope(MemTag::param);
    model = std::make_shared<nn::GPT>(mcfg, init);
  }
  // DDP or ZeRO over every rank, or this rank's stage of a pipeline grid: rank 0's weights everywhere.
  std::unique_ptr<runtime::Trainer> trainer = pipeline::make_trainer(model, cfg, plan, world);
  // ZeRO-Infinity's swap (zero/nvme_store.h): the folders of killed runs this rank's start removed, and why the
  // files are not O_DIRECT where the filesystem refused it.
  if (const std::optional<zero::SwapStats> swap = trainer->engine().strategy().swap_stats()) {
    for (const std::string& gone : swap->removed_leftovers)
      tools::warn("rank " + std::to_string(world.rank()) + ": removed the swap folder of a killed run: " + gone);
    if (!swap->direct && world.rank() == 0) tools::warn("NVMe swap: " + swap->why_not_direct);
  }
  if (!flags.resume.empty()) {
    const runtime::ResumeInfo resumed = trainer->resume(flags.resume);
    if (world.rank() == 0)
      for (const auto& w : resumed.warnings) tools::warn(w);
  }
  clamp_eval_iters(cfg, ds, world.rank());
  print_summary(cfg, plan, *trainer, ds, data_path, world.timeout());
  Recorders rec(flags, *trainer, world);
  train_loop(*trainer, cfg, ds, rec, flags.trace_steps, world.rank());
  finish(*trainer, rec, flags, out, ds.tokenizer(), run_id, world);
}
}  // namespace

int main(int argc, char** argv) {
  dist::ProcessGroup& world = dist::init(&argc, &argv);
  if (world.rank() != 0 && !std::freopen("/dev/null", "w", stdout))  // rank 0 speaks for the job
    dist::abort_job("cannot silence stdout");
  cli::Parser parser{"minitorch-train: train a GPT from a DeepSpeed-style config"};
  Flags flags;
  parser.option("--config", flags.config, "DeepSpeed-style JSON config (configs/*.json)")->required();
  parser.option("--data", flags.data, "UTF-8 text file to train on (default: training.data, else datasets/kjv.txt)");
  parser.option("--steps", flags.steps, "optimizer steps (overrides training.steps)")->check(cli::decimal<std::int64_t>(0));
  parser.option("--seed", flags.seed, "seed for init and batches (overrides training.seed)")->check(cli::decimal<std::int64_t>(0));
  parser.option("--eval-iters", flags.eval_iters, "batches per validation (overrides training.eval_iters; >= 1)")
      ->check(cli::decimal<std::int64_t>(1));
  parser.option("--resume", flags.resume, "checkpoint to continue from: one complete save (CKPT, CKPT.optim, CKPT.manifest.json; or a sharded CKPT/ "
                 "directory), from any number of ranks, any ZeRO stage and any pipeline grid: bit-identical on the "
                 "grid that saved it");
  parser.option("--report", flags.report, "write the run report (JSON, docs/report.md) to this path at the end");
  parser.option("--trace", flags.trace_dir,
                 "record every rank's step trace and write DIR/trace.json (Chrome trace format: Perfetto, "
                 "chrome://tracing; docs/trace.md), DIR/frames.json (the state after each phase; docs/frames.md) and "
                 "DIR/trace.html (its animated player) at the end. Meant for a few steps");
  parser.option("--trace-steps", flags.trace_steps,
                "with --trace: record the first N steps only (default 20); a traced step's events stay in memory "
                "until the end")
      ->check(cli::decimal<std::int64_t>(1));
  parser.option("--out", flags.out, "where to save the checkpoint (overrides training.checkpoint; \"\" = don't save): a file, or a "
                 "directory of shards for ZeRO stages 1-3 on several ranks and for pipelines");
  parser.option("--comm-timeout", flags.comm_timeout,
                 "seconds a rank waits for the others in one collective or receive before it ends the job "
                 "(overrides comm.timeout_s; default 300; 1e9 or more: no limit)")
      ->check(cli::positive_number());
  parser.option("--device", flags.plan.device, tools::kDeviceHelp);
  parser.option("--device-memory", flags.plan.device_memory, tools::kDeviceMemoryHelp);
  parser.option("--link-bandwidth", flags.link_bandwidth,
                "sim only: the host<->device link in bytes per second (\"16GB\"); each copy takes bytes / rate");
  return tools::run_tool(parser, argc, argv, [&] {
    try {
      if (parser.given("--trace-steps") && flags.trace_dir.empty())
        throw runtime::ConfigError("--trace-steps says how many steps --trace records; give --trace DIR too");
      train(flags);
    } catch (const std::exception& e) {
      // The other ranks would wait for us forever; the job exits with our status.
      if (world.size() > 1) dist::abort_job(e.what(), tools::exit_status_of(e));
      throw;
    }
  });
}
