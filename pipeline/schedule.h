#pragma once
/// \file schedule.h
/// Pipeline schedules as data (docs/design.md, "Pipelines"): for each of P stages, the list of
/// instructions it executes for one training step of M micro-batches. GPipe and 1F1B are two functions
/// that build such lists; one executor runs any list, simulate() plays it on a clock, render() prints it.
///
/// \code
///   auto s = minitorch::pipeline::one_f_one_b(/*stages=*/4, /*micro_batches=*/8);
///   minitorch::pipeline::check(s);                  // every micro-batch once per stage, sends = receives
///   auto t = minitorch::pipeline::simulate(s);      // forward 1, backward 2 time units
///   std::cout << minitorch::pipeline::render(t);    // stages as rows, F/B cells by micro-batch
///   // t.bubble == (P - 1) / (M + P - 1) = 3/11; t.stages[0].peak_live == 4 (GPipe: 8)
/// \endcode
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace minitorch::pipeline {

/// What a stage does next. Sends are non-blocking (the executor posts them and goes on); a receive
/// waits for its message.
enum class Op {
  load,         ///< read micro-batch m's tokens (first stage) or targets (last stage)
  forward,      ///< run the stage's layers on micro-batch m, keep its activations
  send_act,     ///< send micro-batch m's output activation to the next stage
  recv_act,     ///< receive micro-batch m's input activation from the previous stage
  backward,     ///< backward of micro-batch m through the stage (frees its activations)
  send_grad,    ///< send the gradient of micro-batch m's input to the previous stage
  recv_grad,    ///< receive the gradient of micro-batch m's output from the next stage
  reduce_tied,  ///< sum the tied embedding / head gradient between the first and last stage
  step,         ///< the optimizer step of the stage's parameters
};
const char* op_name(Op op);

struct Instruction {
  Op op;
  int micro = -1;  ///< the micro-batch, 0..M-1 (-1 for reduce_tied and step)
  int peer = -1;   ///< the other stage of a send or receive
};

/// schedule[s] = stage s's instructions, in order.
using Schedule = std::vector<std::vector<Instruction>>;

/// GPipe (Huang et al. 2019): every stage runs all M forwards, then all M backwards (last micro-batch
/// first). A stage holds the activations of all M micro-batches at once.
Schedule gpipe(int stages, int micro_batches);
/// 1F1B (PipeDream-Flush, Narayanan et al. 2021; DeepSpeed's TrainSchedule): stage s runs
/// min(P - s - 1, M) warm-up forwards, then alternates one forward and one backward, then finishes
/// the remaining backwards. A stage holds at most min(P - s, M) micro-batches' activations.
Schedule one_f_one_b(int stages, int micro_batches);
/// "gpipe" or "1f1b"; anything else is std::invalid_argument naming the two.
Schedule make_schedule(const std::string& name, int stages, int micro_batches);

/// Checks a schedule without running it: on every stage each micro-batch is forwarded once and
/// backwarded once after its forward; a stage that is not first receives each activation before its
/// forward, one that is not last receives each gradient before its backward; every send has its
/// receive on the peer (same op pair, micro-batch and order); reduce_tied on the two end stages (P > 1)
/// and one step per stage, last. Throws std::logic_error naming the stage and the instruction.
void check(const Schedule& schedule);

/// One instruction on the clock.
struct Slot {
  Instruction instruction;
  double start = 0, end = 0;
};
struct StageTimeline {
  std::vector<Slot> slots;  ///< forwards and backwards (the compute), in order
  double busy = 0;          ///< time spent computing
  int peak_live = 0;        ///< most micro-batches whose activations were alive at once
};
struct Timeline {
  std::vector<StageTimeline> stages;
  int micro_batches = 0;
  double forward_cost = 1, backward_cost = 2;
  double span = 0;    ///< first forward's start to last backward's end (reduce_tied and step excluded)
  double bubble = 0;  ///< 1 - Σ busy / (P · span)
};

/// Plays the schedule on a clock: forward costs `forward_cost`, backward `backward_cost`, messages
/// arrive when sent (no transfer time), a receive waits for its message, reduce_tied waits for both end
/// stages. Throws std::logic_error on a deadlock (every stage waiting), naming each stage's next step.
Timeline simulate(const Schedule& schedule, double forward_cost = 1, double backward_cost = 2);

/// The bubble of a balanced pipeline, (P - 1) / (M + P - 1), for both schedules.
double bubble_formula(int stages, int micro_batches);

/// The timeline as text: one row per stage, one 3-character cell per time unit: "F3 " for micro-batch 3's
/// forward, "B3 " then "·· " for its (longer) backward, "   " idle.
std::string render(const Timeline& timeline);

/// The timeline as the pipeline trace page draws it (trace/html_player.h): {"stages": [[{"kind": "F",
/// "micro": 0, "start": 0, "end": 1}, ...] per stage], "micro_batches", "span", "bubble"}.
nlohmann::json timeline_json(const Timeline& timeline);

}  // namespace minitorch::pipeline
