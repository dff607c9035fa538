#include "zero/strategy.h"

namespace minitorch::zero {

std::unique_ptr<optim::AdamW> make_adamw(const nn::NamedTensors& params, const optim::AdamWOptions& opts) {
  return std::make_unique<optim::AdamW>(optim::decay_groups(params, opts.lr, opts.weight_decay), opts);
}

double sum_over_model(const StepRequest& request, double sum_squares) {
  for (dist::ProcessGroup* group : {request.pipeline, request.tensor}) {
    if (!group || group->size() == 1) continue;
    Tensor t = Tensor::full({1}, static_cast<float>(sum_squares), DType::f32, group->device());
    group->all_reduce(t, dist::ReduceOp::sum);
    sum_squares = static_cast<double>(t.item());
  }
  return sum_squares;
}

}  // namespace minitorch::zero
