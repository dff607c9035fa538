// Pipeline schedules as data: GPipe and 1F1B instruction lists, their check, and a clock that plays them
// (schedule.h).
#include "pipeline/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "minitorch/not_implemented.h"

namespace minitorch::pipeline {

const char* op_name(Op op) {
  switch (op) {
    case Op::load: return "load";
    case Op::forward: return "forward";
    case Op::send_act: return "send_act";
    case Op::recv_act: return "recv_act";
    case Op::backward: return "backward";
    case Op::send_grad: return "send_grad";
    case Op::recv_grad: return "recv_grad";
    case Op::reduce_tied: return "reduce_tied";
    case Op::step: return "step";
  }
  return "?";
}

namespace {

void check_sizes(int P, int M) {
  if (P < 1 || M < 1)
    throw std::invalid_argument("pipeline schedule: need at least 1 stage and 1 micro-batch, got " + std::to_string(P) +
                                " stages and " + std::to_string(M) + " micro-batches");
}

// The instructions around one forward / backward of micro-batch m on stage s of P.
void add_forward(std::vector<Instruction>& list, int s, int P, int m) {
  if (s == 0 || s == P - 1) list.push_back({Op::load, m});  // tokens on the first stage, targets on the last
  if (s > 0) list.push_back({Op::recv_act, m, s - 1});
  list.push_back({Op::forward, m});
  if (s < P - 1) list.push_back({Op::send_act, m, s + 1});
}
void add_backward(std::vector<Instruction>& list, int s, int P, int m) {
  if (s < P - 1) list.push_back({Op::recv_grad, m, s + 1});
  list.push_back({Op::backward, m});
  if (s > 0) list.push_back({Op::send_grad, m, s - 1});
}
void add_end(std::vector<Instruction>& list, int s, int P) {
  if (P > 1 && (s == 0 || s == P - 1)) list.push_back({Op::reduce_tied, -1, s == 0 ? P - 1 : 0});
  list.push_back({Op::step});
}

std::string where(int s, std::size_t k, const Instruction& in) {
  return "stage " + std::to_string(s) + ", instruction " + std::to_string(k) + " (" + op_name(in.op) +
         (in.micro >= 0 ? " micro-batch " + std::to_string(in.micro) : std::string()) + ")";
}

}  // namespace

Schedule gpipe(int P, int M) {
  check_sizes(P, M);
  Schedule out(P);
  for (int s = 0; s < P; ++s) {
    for (int m = 0; m < M; ++m) add_forward(out[s], s, P, m);
    for (int m = M - 1; m >= 0; --m) add_backward(out[s], s, P, m);
    add_end(out[s], s, P);
  }
  return out;
}

Schedule one_f_one_b(int P, int M) {
  check_sizes(P, M);
  // BEGIN SOLUTION L09.1
  Schedule out(P);
  for (int s = 0; s < P; ++s) {
    const int warmup = std::min(P - s - 1, M);
    int next_f = 0, next_b = 0;
    for (; next_f < warmup; ++next_f) add_forward(out[s], s, P, next_f);
    while (next_f < M) {  // steady state: one forward, then the oldest micro-batch's backward
      add_forward(out[s], s, P, next_f++);
      add_backward(out[s], s, P, next_b++);
    }
    while (next_b < M) add_backward(out[s], s, P, next_b++);  // cool-down
    add_end(out[s], s, P);
  }
  return out;
  // END SOLUTION
}

Schedule make_schedule(const std::string& name, int stages, int micro_batches) {
  if (name == "gpipe") return gpipe(stages, micro_batches);
  if (name == "1f1b") return one_f_one_b(stages, micro_batches);
  throw std::invalid_argument("pipeline schedule '" + name + "': expected \"gpipe\" or \"1f1b\"");
}

namespace {

/// The messages of one kind between two stages, in order: (from, to, kind 0 activations / 1 gradients).
using Messages = std::map<std::tuple<int, int, int>, std::vector<int>>;

/// One stage's instruction list, read in order: forwards and backwards once each, receives before use,
/// one optimizer step at the end; what it sends and receives goes into `sent` and `received`.
struct StageCheck {
  int s, P, M;
  Messages& sent;
  Messages& received;
  std::vector<int> forwarded, backwarded, act_in, grad_in;
  int steps = 0, tied = 0;

  StageCheck(int stage, int stages, int micro_batches, Messages& out, Messages& in)
      : s(stage), P(stages), M(micro_batches), sent(out), received(in), forwarded(M), backwarded(M), act_in(M), grad_in(M) {}

  void fail_unless(bool ok, std::size_t k, const Instruction& in, const char* why) const {
    if (!ok) throw std::logic_error(where(s, k, in) + why);
  }

  void visit(std::size_t k, const Instruction& in) {
    const bool has_micro = in.op != Op::reduce_tied && in.op != Op::step;
    fail_unless(!has_micro || (in.micro >= 0 && in.micro < M), k, in, ": no such micro-batch");
    fail_unless(steps == 0, k, in, ": after the optimizer step");
    switch (in.op) {
      case Op::load: fail_unless(s == 0 || s == P - 1, k, in, ": only the first and last stage load data"); break;
      case Op::recv_act:
        fail_unless(s > 0 && in.peer == s - 1, k, in, ": activations come from stage s-1");
        ++act_in[in.micro];
        received[{s - 1, s, 0}].push_back(in.micro);
        break;
      case Op::forward:
        fail_unless(!forwarded[in.micro]++, k, in, ": forwarded twice");
        fail_unless(s == 0 || act_in[in.micro] == 1, k, in, ": its activation was not received");
        break;
      case Op::send_act:
        fail_unless(s < P - 1 && in.peer == s + 1, k, in, ": activations go to stage s+1");
        fail_unless(forwarded[in.micro], k, in, ": sent before its forward");
        sent[{s, s + 1, 0}].push_back(in.micro);
        break;
      case Op::recv_grad:
        fail_unless(s < P - 1 && in.peer == s + 1, k, in, ": gradients come from stage s+1");
        ++grad_in[in.micro];
        received[{s + 1, s, 1}].push_back(in.micro);
        break;
      case Op::backward:
        fail_unless(forwarded[in.micro], k, in, ": backward before its forward");
        fail_unless(!backwarded[in.micro]++, k, in, ": backwarded twice");
        fail_unless(s == P - 1 || grad_in[in.micro] == 1, k, in, ": its gradient was not received");
        break;
      case Op::send_grad:
        fail_unless(s > 0 && in.peer == s - 1, k, in, ": gradients go to stage s-1");
        fail_unless(backwarded[in.micro], k, in, ": sent before its backward");
        sent[{s, s - 1, 1}].push_back(in.micro);
        break;
      case Op::reduce_tied:
        fail_unless(P > 1 && (s == 0 || s == P - 1), k, in, ": only the two end stages hold the tied weight");
        ++tied;
        break;
      case Op::step: ++steps; break;
    }
  }

  /// After the list: every micro-batch forwarded and backwarded once, one step, the tied gradient on the ends.
  void finish() const {
    const std::string stage = "stage " + std::to_string(s);
    for (int m = 0; m < M; ++m)
      if (forwarded[m] != 1 || backwarded[m] != 1)
        throw std::logic_error(stage + ": micro-batch " + std::to_string(m) + " forwarded " + std::to_string(forwarded[m]) +
                               " and backwarded " + std::to_string(backwarded[m]) + " times (once each expected)");
    if (steps != 1) throw std::logic_error(stage + ": no optimizer step at the end");
    if ((P > 1 && (s == 0 || s == P - 1)) != (tied == 1))
      throw std::logic_error(stage + ": the tied gradient must be reduced once on each end stage");
  }
};

/// Between two stages, messages of one kind arrive in the order they were sent: every receive has its send.
void check_messages(const Messages& sent, const Messages& received) {
  if (sent == received) return;
  for (const auto& [key, list] : sent) {
    auto it = received.find(key);
    if (it == received.end() || it->second != list)
      throw std::logic_error(std::string(std::get<2>(key) ? "gradients" : "activations") + " sent by stage " +
                             std::to_string(std::get<0>(key)) + " to stage " + std::to_string(std::get<1>(key)) +
                             " are not received in the order they are sent");
  }
  throw std::logic_error("a stage receives a message nobody sends");
}

}  // namespace

void check(const Schedule& schedule) {
  const int P = static_cast<int>(schedule.size());
  if (P == 0) throw std::logic_error("pipeline schedule: no stages");
  int M = 0;
  for (const auto& list : schedule)
    for (const auto& in : list) M = std::max(M, in.micro + 1);
  Messages sent, received;
  for (int s = 0; s < P; ++s) {
    StageCheck stage(s, P, M, sent, received);
    const auto& list = schedule[static_cast<std::size_t>(s)];
    for (std::size_t k = 0; k < list.size(); ++k) stage.visit(k, list[k]);
    stage.finish();
  }
  check_messages(sent, received);
}

Timeline simulate(const Schedule& schedule, double forward_cost, double backward_cost) {
  const int P = static_cast<int>(schedule.size());
  Timeline t;
  t.stages.resize(P);
  t.forward_cost = forward_cost;
  t.backward_cost = backward_cost;
  for (const auto& list : schedule)
    for (const auto& in : list) t.micro_batches = std::max(t.micro_batches, in.micro + 1);
  std::vector<std::size_t> next(P, 0);
  std::vector<double> clock(P, 0);
  std::vector<int> live(P, 0);
  std::map<std::tuple<int, int, int, int>, double> arrived;  // (from, to, kind, micro) -> when
  std::vector<double> tied_ready(P, -1);
  double first = INFINITY, last = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < P; ++s) {
      while (next[s] < schedule[s].size()) {
        const Instruction& in = schedule[s][next[s]];
        double& now = clock[s];
        if (in.op == Op::recv_act || in.op == Op::recv_grad) {
          auto it = arrived.find({in.peer, s, in.op == Op::recv_grad, in.micro});
          if (it == arrived.end()) break;  // wait for the message
          now = std::max(now, it->second);
          arrived.erase(it);
        } else if (in.op == Op::send_act || in.op == Op::send_grad) {
          arrived[{s, in.peer, in.op == Op::send_grad, in.micro}] = now;
        } else if (in.op == Op::forward || in.op == Op::backward) {
          const double cost = in.op == Op::forward ? forward_cost : backward_cost;
          t.stages[s].slots.push_back({in, now, now + cost});
          t.stages[s].busy += cost;
          first = std::min(first, now);
          now += cost;
          last = std::max(last, now);
          live[s] += in.op == Op::forward ? 1 : -1;
          t.stages[s].peak_live = std::max(t.stages[s].peak_live, live[s]);
        } else if (in.op == Op::reduce_tied) {  // a collective of the two end stages: both must be there
          if (tied_ready[s] < 0) tied_ready[s] = now;
          if (tied_ready[in.peer] < 0) break;
          now = std::max(tied_ready[s], tied_ready[in.peer]);
        }
        ++next[s];
        progress = true;
      }
    }
  }
  for (int s = 0; s < P; ++s)
    if (next[s] < schedule[s].size()) {
      std::string msg = "pipeline schedule deadlocks:";
      for (int r = 0; r < P; ++r)
        if (next[r] < schedule[r].size())
          msg.append(" ").append(where(r, next[r], schedule[r][next[r]])).append(" waits;");
        else
          msg.append(" stage ").append(std::to_string(r)).append(" done;");
      throw std::logic_error(msg);
    }
  t.span = last - (first == INFINITY ? 0 : first);
  double busy = 0;
  for (const auto& st : t.stages) busy += st.busy;
  t.bubble = t.span > 0 ? 1 - busy / (P * t.span) : 0;
  return t;
}

double bubble_formula(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / (micro_batches + stages - 1);
}

std::string render(const Timeline& t) {
  const double unit = std::min(t.forward_cost, t.backward_cost);
  const int cells = static_cast<int>(std::ceil(t.span / unit - 1e-9));
  std::string out;
  for (std::size_t s = 0; s < t.stages.size(); ++s) {
    std::vector<std::string> row(cells, "   ");
    for (const Slot& slot : t.stages[s].slots) {
      const int a = static_cast<int>(std::lround(slot.start / unit)), b = static_cast<int>(std::lround(slot.end / unit));
      std::string label(1, slot.instruction.op == Op::forward ? 'F' : 'B');
      label += std::to_string(slot.instruction.micro);
      label.resize(3, ' ');
      for (int c = a; c < b && c < cells; ++c) row[c] = c == a ? label : "·· ";
    }
    char head[32];
    std::snprintf(head, sizeof head, "stage %zu |", s);
    out += head;
    for (const auto& c : row) out += c;
    out += "|\n";
  }
  return out;
}

nlohmann::json timeline_json(const Timeline& timeline) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StageTimeline& st : timeline.stages) {
    nlohmann::json slots = nlohmann::json::array();
    for (const Slot& slot : st.slots)
      slots.push_back({{"kind", slot.instruction.op == Op::forward ? "F" : "B"},
                       {"micro", slot.instruction.micro},
                       {"start", slot.start},
                       {"end", slot.end}});
    stages.push_back(std::move(slots));
  }
  return {{"stages", stages}, {"micro_batches", timeline.micro_batches}, {"span", timeline.span},
          {"bubble", timeline.bubble}};
}

}  // namespace minitorch::pipeline
