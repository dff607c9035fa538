// minitorch-pipeline --stages P --micro M [--schedule gpipe|1f1b] [--list] [--backward-cost B]
// Prints a pipeline schedule (pipeline/schedule.h) as a timeline: stages as rows, one cell per time unit,
// F<m> for micro-batch m's forward and B<m> for its backward (twice as long: B = 2 by default); then the
// bubble predicted by (P - 1) / (M + P - 1) next to the one of the played timeline, and each stage's most
// micro-batches alive at once (GPipe: M; 1F1B: at most P). --list prints every stage's instructions.
// Exit status: 0, or 2 for a usage error.
#include <cstdio>

#include "cli_common.h"
#include "pipeline/schedule.h"

using namespace minitorch;

int main(int argc, char** argv) {
  cli::Parser parser{"minitorch-pipeline: a pipeline schedule's timeline, bubble and activation stash"};
  int stages = 4, micro = 8;
  double backward_cost = 2;
  std::string schedule = "1f1b";
  bool list = false;
  parser.option("--stages", stages, "pipeline stages P")->check(cli::decimal<int>(1))->show_default();
  parser.option("--micro", micro, "micro-batches per step M")->check(cli::decimal<int>(1))->show_default();
  parser.option("--schedule", schedule, "gpipe or 1f1b")->check(cli::one_of({"gpipe", "1f1b"}))->show_default();
  parser.option("--backward-cost", backward_cost, "a backward's time in forwards")
      ->check(cli::range(0.5, 10.0))
      ->show_default();
  parser.flag("--list", list, "also print every stage's instruction list");
  return tools::run_tool(parser, argc, argv, [&] {
    const pipeline::Schedule s = pipeline::make_schedule(schedule, stages, micro);
    pipeline::check(s);
    const pipeline::Timeline t = pipeline::simulate(s, 1.0, backward_cost);
    std::printf("%s, %d stages, %d micro-batches (forward 1, backward %g time units)\n\n", schedule.c_str(), stages,
                micro, backward_cost);
    std::fputs(pipeline::render(t).c_str(), stdout);
    std::printf("\nbubble: %.4f played, (P-1)/(M+P-1) = %d/%d = %.4f\n", t.bubble, stages - 1, micro + stages - 1,
                pipeline::bubble_formula(stages, micro));
    std::printf("micro-batches alive at once (activations stashed) per stage:");
    for (const auto& st : t.stages) std::printf(" %d", st.peak_live);
    std::printf("\n");
    if (list)
      for (int st = 0; st < stages; ++st) {
        std::printf("\nstage %d:", st);
        for (const auto& in : s[st]) {
          std::printf(" %s", pipeline::op_name(in.op));
          if (in.micro >= 0) std::printf("(%d)", in.micro);
        }
        std::printf("\n");
      }
  });
}
