// L09 — pipeline schedules as data (pipeline/schedule.h): GPipe and 1F1B lists for P <= 4 stages and
// M <= 8 micro-batches pass the check (each micro-batch forwarded and backwarded once per stage, in
// dependency order, sends matching receives) and play on the clock with the bubble of the formula,
// GPipe stashing M micro-batches and 1F1B at most P; broken lists are one clear error each.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "pipeline/schedule.h"

namespace pp = minitorch::pipeline;

namespace {

std::string error_of(const pp::Schedule& s) {
  try {
    pp::check(s);
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// Both schedules, P <= 4 stages, M <= 8 micro-batches: the list checks, the clock's bubble is the
// formula's, the span (M + P - 1) forward+backward slots; GPipe keeps all M micro-batches alive on every
// stage, 1F1B at most P - s on stage s (a warm-up one forward too long keeps P - s + 1).
static void expect_plays_with_the_formulas(const std::string& name) {
  for (int P = 1; P <= 4; ++P)
    for (int M = 1; M <= 8; ++M) {
      const pp::Schedule s = pp::make_schedule(name, P, M);
      ASSERT_EQ(static_cast<int>(s.size()), P);
      EXPECT_NO_THROW(pp::check(s)) << name << " P=" << P << " M=" << M << ": " << error_of(s);
      const pp::Timeline t = pp::simulate(s);
      EXPECT_NEAR(t.bubble, pp::bubble_formula(P, M), 1e-12) << name << " P=" << P << " M=" << M;
      EXPECT_DOUBLE_EQ(t.span, (M + P - 1) * 3.0) << name << " P=" << P << " M=" << M;
      for (int st = 0; st < P; ++st) {
        const int expected = name == "gpipe" ? M : std::min(P - st, M);
        EXPECT_EQ(t.stages[st].peak_live, expected) << name << " P=" << P << " M=" << M << " stage " << st;
        EXPECT_DOUBLE_EQ(t.stages[st].busy, M * 3.0);
      }
    }
}

TEST(L09_Schedule, GPipeChecksAndPlaysWithTheFormulasBubble) { expect_plays_with_the_formulas("gpipe"); }

// L09.1 (lab task: one_f_one_b)
TEST(L09_T1_Schedule, OneFOneBChecksAndPlaysWithTheFormulasBubble) { expect_plays_with_the_formulas("1f1b"); }

TEST(L09_T1_Schedule, OneFOneBWarmsUpThenAlternates) {
  // Stage 0 of 4 stages, 6 micro-batches: 3 warm-up forwards, then F B pairs, then 3 backwards.
  // Stage 3, the last: no warm-up, F B from the start.
  auto order = [](const std::vector<pp::Instruction>& list) {
    std::string out;
    for (const auto& in : list)
      if (in.op == pp::Op::forward || in.op == pp::Op::backward)
        out.append(1, in.op == pp::Op::forward ? 'F' : 'B').append(std::to_string(in.micro)).append(" ");
    return out;
  };
  const pp::Schedule s = pp::one_f_one_b(4, 6);
  EXPECT_EQ(order(s[0]), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  EXPECT_EQ(order(s[3]), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
  // Fewer micro-batches than the warm-up: all forwards, then all backwards, oldest first.
  EXPECT_EQ(order(pp::one_f_one_b(4, 2)[0]), "F0 F1 B0 B1 ");
}

TEST(L09_Schedule, RenderDrawsStagesAsRowsOfForwardAndBackwardCells) {
  const std::string text = pp::render(pp::simulate(pp::gpipe(2, 2)));
  EXPECT_EQ(text,
            "stage 0 |F0 F1          B1 ·· B0 ·· |\n"
            "stage 1 |   F0 F1 B1 ·· B0 ··       |\n");
}

TEST(L09_Schedule, BrokenListsAreOneClearErrorEach) {
  pp::Schedule s = pp::gpipe(2, 2);
  s[1].erase(s[1].begin() + 1);  // stage 1 forgets to receive micro-batch 0's activation
  EXPECT_NE(error_of(s).find("stage 1, instruction 1 (forward micro-batch 0): its activation was not received"),
            std::string::npos)
      << error_of(s);

  s = pp::gpipe(3, 2);
  for (auto it = s[1].begin(); it != s[1].end(); ++it)
    if (it->op == pp::Op::backward && it->micro == 0) {  // stage 1 never runs micro-batch 0's backward
      s[1].erase(it);
      break;
    }
  EXPECT_NE(error_of(s).find("stage 1, instruction 10 (send_grad micro-batch 0): sent before its backward"),
            std::string::npos)
      << error_of(s);

  s = pp::gpipe(2, 3);
  std::swap(s[0][2], s[0][6]);  // stage 0 sends micro-batches' activations out of order
  EXPECT_FALSE(error_of(s).empty());

  // A list that checks but cannot run: stage 0 waits for a gradient before sending the activation.
  pp::Schedule dead(2);
  dead[0] = {{pp::Op::load, 0}, {pp::Op::forward, 0}, {pp::Op::recv_grad, 0, 1}, {pp::Op::send_act, 0, 1},
             {pp::Op::backward, 0}, {pp::Op::reduce_tied, -1, 1}, {pp::Op::step}};
  dead[1] = pp::gpipe(2, 1)[1];
  EXPECT_NO_THROW(pp::check(dead));
  try {
    pp::simulate(dead);
    FAIL() << "a deadlock must throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlocks: stage 0, instruction 2 (recv_grad micro-batch 0) waits"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(pp::make_schedule("interleaved", 2, 2), std::invalid_argument);
  EXPECT_THROW(pp::gpipe(0, 2), std::invalid_argument);
}
