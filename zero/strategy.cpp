#include "zero/strategy.h"

namespace minitorch::zero {

std::unique_ptr<optim::AdamW> make_adamw(const nn::NamedTensors& params, const optim::AdamWOptions& opts) {
  return std::make_unique<optim::AdamW>(optim::decay_groups(params, opts.lr, opts.weight_decay), opts);
}

double sum_over_pipeline(const StepRequest& request, double sum_squares) {
  if (!request.pipeline || request.pipeline->size() == 1) return sum_squares;
  Tensor t = Tensor::full({1}, static_cast<float>(sum_squares), DType::f32, request.pipeline->device());
  request.pipeline->all_reduce(t, dist::ReduceOp::sum);
  return static_cast<double>(t.item());
}

}  // namespace minitorch::zero
