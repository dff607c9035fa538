// The data × pipeline grid: two MPI_Comm_splits of the world (grid.h has the rank layout).
#include "dist/grid.h"

#include <stdexcept>
#include <string>

namespace minitorch::dist {

Grid make_grid(ProcessGroup& world, int pipeline_stages) {
  const int n = world.size();
  if (pipeline_stages < 1 || n % pipeline_stages != 0)
    throw std::invalid_argument("make_grid: a world of " + std::to_string(n) + " ranks cannot be split into " +
                                std::to_string(pipeline_stages) + " pipeline stages (the number of stages must be " +
                                "at least 1 and divide the world size)");
  Grid g;
  g.stages = pipeline_stages;
  g.dp_size = n / pipeline_stages;
  g.stage = world.rank() / g.dp_size;
  g.dp_rank = world.rank() % g.dp_size;
  // Same stage → one data group, ordered by dp_rank; same dp_rank → one pipeline, ordered by stage.
  g.data = world.split(/*color=*/g.stage, /*key=*/g.dp_rank);
  g.pipe = world.split(/*color=*/g.dp_rank, /*key=*/g.stage);
  return g;
}

}  // namespace minitorch::dist
