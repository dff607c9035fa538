// The data × pipeline × tensor grid: three MPI_Comm_splits of the world (grid.h has the rank layout).
#include "dist/grid.h"

#include <stdexcept>
#include <string>

namespace minitorch::dist {

Grid make_grid(ProcessGroup& world, int pipeline_stages, int tensor_size) {
  const int n = world.size();
  if (pipeline_stages < 1 || tensor_size < 1 || n % (pipeline_stages * tensor_size) != 0)
    throw std::invalid_argument(
        "make_grid: a world of " + std::to_string(n) + " ranks cannot be split into " + std::to_string(pipeline_stages) +
        " pipeline stages" + (tensor_size != 1 ? " × " + std::to_string(tensor_size) + " tensor ranks" : std::string()) +
        " (the number of stages" + (tensor_size != 1 ? " times the tensor-parallel size" : std::string()) +
        " must be at least 1 and divide the world size)");
  Grid g;
  g.stages = pipeline_stages;
  g.tp_size = tensor_size;
  g.dp_size = n / (pipeline_stages * tensor_size);
  const int w = world.rank();
  g.tp_rank = w % g.tp_size;
  g.dp_rank = (w / g.tp_size) % g.dp_size;
  g.stage = w / (g.tp_size * g.dp_size);
  // Same (stage, tp_rank) → one data group, ordered by dp_rank; same (dp_rank, tp_rank) → one pipeline,
  // ordered by stage; same (stage, dp_rank) → one tensor group, ordered by tp_rank.
  g.data = world.split(/*color=*/g.stage * g.tp_size + g.tp_rank, /*key=*/g.dp_rank);
  g.pipe = world.split(/*color=*/g.dp_rank * g.tp_size + g.tp_rank, /*key=*/g.stage);
  g.tensor = world.split(/*color=*/g.stage * g.dp_size + g.dp_rank, /*key=*/g.tp_rank);
  g.data->set_label("data");
  g.pipe->set_label("pipeline");
  g.tensor->set_label("tensor");
  return g;
}

}  // namespace minitorch::dist
