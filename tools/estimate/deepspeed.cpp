#include "tools/estimate/deepspeed.h"

#include <sstream>

namespace minitorch::estimate {

namespace {

runtime::DeepSpeedEstimate zero2_estimate(double psi, runtime::DeepSpeedTopology t, const DeepSpeedSetup& s) {
  return runtime::deepspeed_zero2(psi, t.gpus_per_node, t.nodes, s.offload == runtime::Offload::optimizer,
                                  s.options.buffer_factor);
}

runtime::DeepSpeedEstimate zero3_estimate(double psi, double largest, runtime::DeepSpeedTopology t,
                                          const DeepSpeedSetup& s) {
  return runtime::deepspeed_zero3(psi, largest, t.gpus_per_node, t.nodes, s.offload != runtime::Offload::none,
                                  s.offload == runtime::Offload::param, s.options.zero_init, s.options.buffer_factor);
}

/// `e`, refused when it does not fit 64-bit bytes: the CPU bytes scale with --buffer-factor, so they name it
/// when they would fit at factor 1 (`unscaled`).
runtime::DeepSpeedEstimate checked(const char* name, const runtime::DeepSpeedEstimate& e,
                                   const runtime::DeepSpeedEstimate& unscaled, double factor, const Inputs& inputs) {
  const std::string estimate = std::string("DeepSpeed's ") + name;
  check_bytes(e.gpu, inputs, estimate + " GPU estimate " + e.gpu_text);
  if (!fits_int64(e.cpu) && fits_int64(unscaled.cpu)) {
    std::ostringstream what;
    what << "--buffer-factor " << factor;
    check_bytes(e.cpu, {what.str(), "--buffer-factor"}, estimate + " CPU estimate " + e.cpu_text);
  }
  check_bytes(e.cpu, inputs, estimate + " CPU estimate " + e.cpu_text);
  return e;
}

json estimate_json(const runtime::DeepSpeedEstimate& e) {
  return {{"gpu", exact_bytes(e.gpu)}, {"cpu", exact_bytes(e.cpu)}, {"gpu_gib", e.gpu / runtime::kGiB},
          {"cpu_gib", e.cpu / runtime::kGiB}, {"gpu_text", e.gpu_text}, {"cpu_text", e.cpu_text}};
}

}  // namespace

DeepSpeedRow deepspeed_row(double psi, int world, const DeepSpeedSetup& setup, const Inputs& inputs) {
  DeepSpeedRow row{setup, runtime::deepspeed_topology(world, setup.gpus_per_node), {}, {}, {}};
  DeepSpeedSetup unscaled = setup;  // the same at factor 1: tells whether --buffer-factor overflows them
  unscaled.options.buffer_factor = 1;
  const double factor = setup.options.buffer_factor;
  // offload_param needs stage 3: DeepSpeed's ZeRO-2 estimator has no such case.
  if (setup.columns.zero2 && setup.offload != runtime::Offload::param) {
    row.zero2 = checked("ZeRO-2", zero2_estimate(psi, row.topology, setup), zero2_estimate(psi, row.topology, unscaled),
                        factor, inputs);
    if (setup.offload == runtime::Offload::none) {
      row.zero2_before_v0_14_3 = runtime::deepspeed_zero2_gpu_before_v0_14_3(psi, world);
      check_bytes(*row.zero2_before_v0_14_3, inputs, "DeepSpeed's ZeRO-2 GPU estimate before v0.14.3, 4Ψ + 16Ψ/N,");
    }
  }
  if (setup.columns.zero3) {
    const auto layer = static_cast<double>(*setup.largest_layer);
    row.zero3 = checked("ZeRO-3", zero3_estimate(psi, layer, row.topology, setup),
                        zero3_estimate(psi, layer, row.topology, unscaled), factor, inputs);
  }
  return row;
}

json deepspeed_json(const DeepSpeedRow& row) {
  const DeepSpeedSetup& s = row.setup;
  json j = {{"gpus_per_node", row.topology.gpus_per_node}, {"nodes", row.topology.nodes},
            {"topology", runtime::topology_text(row.topology)}, {"zero_init", s.options.zero_init},
            {"buffer_factor", s.options.buffer_factor},
            {"largest_layer", s.largest_layer ? json(*s.largest_layer) : json(nullptr)}};
  if (s.columns.zero2) {
    j["zero2"] = row.zero2 ? estimate_json(*row.zero2) : json(nullptr);
    if (row.zero2_before_v0_14_3) j["zero2"]["gpu_before_v0_14_3"] = exact_bytes(*row.zero2_before_v0_14_3);
  }
  if (row.zero3) j["zero3"] = estimate_json(*row.zero3);
  return j;
}

std::vector<std::string> deepspeed_cells(const DeepSpeedRow& row) {
  std::vector<std::string> cells = {runtime::topology_text(row.topology)};
  if (row.setup.columns.zero2) {
    if (row.zero2) cells.insert(cells.end(), {runtime::format_gib(row.zero2->gpu), runtime::format_gib(row.zero2->cpu)});
    else cells.insert(cells.end(), {"n/a", "n/a"});
    if (row.zero2_before_v0_14_3) cells.push_back(runtime::format_gib(*row.zero2_before_v0_14_3));
  }
  if (row.zero3) cells.insert(cells.end(), {runtime::format_gib(row.zero3->gpu), runtime::format_gib(row.zero3->cpu)});
  return cells;
}

std::vector<std::pair<std::string, std::string>> deepspeed_headers(const DeepSpeedSetup& setup) {
  // Each estimator's formula texts, taken from an estimate of one parameter on one GPU.
  const runtime::DeepSpeedTopology one{1, 1};
  std::vector<std::pair<std::string, std::string>> h = {{"nodes x GPUs", ""}};
  if (setup.columns.zero2) {
    if (setup.offload == runtime::Offload::param) {
      h.insert(h.end(), {{"ZeRO-2 per GPU", "(no offload_param)"}, {"ZeRO-2 per CPU", ""}});
    } else {
      const runtime::DeepSpeedEstimate e = zero2_estimate(1, one, setup);
      h.insert(h.end(), {{"ZeRO-2 per GPU", e.gpu_text}, {"ZeRO-2 per CPU", e.cpu_text}});
      if (setup.offload == runtime::Offload::none) h.emplace_back("ZeRO-2 <v0.14.3", "4Ψ + 16Ψ/N");
    }
  }
  if (setup.columns.zero3) {
    const runtime::DeepSpeedEstimate e = zero3_estimate(1, 1, one, setup);
    h.insert(h.end(), {{"ZeRO-3 per GPU", e.gpu_text}, {"ZeRO-3 per CPU", e.cpu_text}});
  }
  return h;
}

}  // namespace minitorch::estimate
