#pragma once
// What the lessons on the simulated accelerator share (lessons 10 and 11): an engine built on each rank's `sim`
// card as the tools build it, the card checked empty after each run, and every rank's figures gathered so that
// rank 0 can say whether the ranks agree — an out-of-memory error included, by its first line.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "minitorch/allocator.h"
#include "nn/gpt.h"
#include "runtime/engine.h"
#include "runtime/plan.h"

namespace lesson {

/// The engine of `cfg` on this rank's simulated accelerator of `capacity` bytes (0: no limit), built as the tools
/// build it: the plan (runtime/plan.h) on --device sim --device-memory capacity, the card set up by it, the model
/// drawn on the host (the same seed on every rank), then runtime::initialize moves it to the card.
inline std::unique_ptr<minitorch::runtime::Engine> engine_on_sim(const minitorch::runtime::Config& cfg, std::int64_t V,
                                                                 std::int64_t capacity,
                                                                 minitorch::dist::ProcessGroup& world) {
  namespace rt = minitorch::runtime;
  rt::PlanOverrides on_card{.device = "sim", .device_memory = std::nullopt};
  if (capacity > 0) on_card.device_memory = std::to_string(capacity);
  rt::Plan plan = rt::make_plan(cfg, on_card);
  rt::setup_device(plan);  // this rank's card: its capacity
  minitorch::reset_peak_memory(plan.device);
  minitorch::Generator init(cfg.training.seed);  // the same weights on every rank
  std::shared_ptr<minitorch::nn::GPT> model;
  {
    minitorch::TagScope scope(minitorch::MemTag::param);
    model = std::make_shared<minitorch::nn::GPT>(rt::model_config(cfg, V), init);  // built on the host
  }
  return rt::initialize(model, cfg, plan, &world);  // as deepspeed.initialize: the model goes to the card
}

/// After a run: the card's limit lifted (a plan on sim without a capacity), so what it left can be read.
inline void lift_sim_capacity(const minitorch::runtime::Config& cfg) {
  minitorch::runtime::Plan unlimited =
      minitorch::runtime::make_plan(cfg, {.device = "sim", .device_memory = std::nullopt});
  minitorch::runtime::setup_device(unlimited);
}

/// The card after `run` (of lesson `lesson`): its limit lifted, its statistics, and a std::logic_error if anything
/// is still held on it — one engine at a time, so the next run starts from an empty card.
inline minitorch::MemoryStats card_after(const minitorch::runtime::Config& cfg, const std::string& lesson,
                                         const std::string& run) {
  lift_sim_capacity(cfg);
  const minitorch::MemoryStats card = minitorch::memory_stats(minitorch::Device::sim());
  if (card.current_total != 0)
    throw std::logic_error(lesson + ": " + std::to_string(card.current_total) + " bytes still held on sim after " + run);
  return card;
}

/// Every rank's `mine`, rank by rank, on every rank (exact: int64).
inline std::vector<std::int64_t> all_ranks(const std::vector<std::int64_t>& mine, int N) {
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(N));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(), static_cast<int>(mine.size()),
                MPI_INT64_T, MPI_COMM_WORLD);
  return all;
}

/// An out-of-memory error's first line without "of rank r" — what was asked and what was in use —, hashed: equal
/// on every rank that failed at the same allocation with the same bytes in use.
inline std::int64_t error_fingerprint(const std::string& error) {
  std::string asked = error.substr(0, error.find('\n'));
  if (const std::size_t r = asked.find(" of rank "); r != std::string::npos) asked.erase(r, asked.find(':', r) - r);
  return static_cast<std::int64_t>(std::hash<std::string>{}(asked) >> 1);
}

/// The first line of an out-of-memory message, and each of its lines that contains one of `keys`.
inline void print_error_lines(const std::string& error, const std::vector<std::string>& keys) {
  std::istringstream in(error);
  std::string line;
  for (bool first = true; std::getline(in, line); first = false) {
    bool show = first;
    for (const std::string& k : keys) show |= line.find(k) != std::string::npos;
    if (show) std::printf("  %s\n", line.c_str());
  }
}

}  // namespace lesson
