// Releasable data: a parameter's bytes can be dropped and given back (ZeRO-3 gathers a parameter
// before its layer runs and releases it afterwards), while the TensorImpl — what the optimizer,
// hooks and graph nodes hold — stays the same.
#include <stdexcept>
#include <string>

#include "minitorch/tensor.h"

namespace minitorch {

void Tensor::release_data() {
  TensorImpl& im = impl();
  im.storage = Storage::empty(im.storage->device(), im.storage->tag());
  im.offset = 0;
}

bool Tensor::is_released() const { return !impl().storage->data() && numel() > 0; }

void Tensor::set_data(const Tensor& src) {
  if (!src.defined() || src.shape() != shape() || src.dtype() != dtype())
    throw std::invalid_argument("set_data: " + src.describe() + " for " + describe() +
                                (name().empty() ? std::string() : " '" + name() + "'") + " (shape and dtype must match)");
  if (src.same(*this)) return;
  TensorImpl& im = impl();
  im.storage = src.storage();
  im.strides = src.strides();
  im.offset = src.offset();
}

}  // namespace minitorch
