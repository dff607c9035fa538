#include "minitorch/tensor.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "minitorch/backend.h"
#include "minitorch/random.h"
#include "minitorch/strided.h"
#include "minitorch/not_implemented.h"

namespace minitorch {

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ")";
  return os.str();
}

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

void check_data_type(DType dtype, std::size_t sizeof_t, bool is_float, bool is_int) {
  bool ok = (dtype == DType::f32 && is_float) || (dtype == DType::i32 && is_int) ||
            (is_half(dtype) && sizeof_t == 2 && !is_float && !is_int);
  if (!ok)
    throw std::invalid_argument(std::string("Tensor::data<T>(): T does not match dtype ") + dtype_name(dtype));
}

TensorImpl& Tensor::impl() const {
  if (!impl_) throw std::logic_error("use of an undefined Tensor");
  return *impl_;
}

namespace {
std::int64_t wrap_dim(std::int64_t d, std::int64_t ndim, const char* op) {
  std::int64_t w = d < 0 ? d + ndim : d;
  if (w < 0 || w >= ndim)
    throw std::invalid_argument(std::string(op) + ": dimension " + std::to_string(d) + " out of range for " +
                                std::to_string(ndim) + "-d tensor");
  return w;
}

Tensor make_view(const Tensor& base, Shape shape, Shape strides, std::int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(impl);
}
}  // namespace

// ---------------- creation ----------------
Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (auto s : shape)
    if (s < 0) throw std::invalid_argument("Tensor::empty: negative size in shape " + shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.f, dtype, device); }
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.f, dtype, device); }

Tensor Tensor::full(const Shape& shape, float value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, DType dtype) {
  if (static_cast<std::int64_t>(values.size()) != shape_numel(shape))
    throw std::invalid_argument("Tensor::from_vector: " + std::to_string(values.size()) +
                                " values for shape " + shape_str(shape));
  Tensor t = empty(shape, dtype);
  store_floats(t, values.data());
  return t;
}

Tensor Tensor::from_ints(const std::vector<std::int32_t>& values, const Shape& shape) {
  if (static_cast<std::int64_t>(values.size()) != shape_numel(shape))
    throw std::invalid_argument("Tensor::from_ints: " + std::to_string(values.size()) + " values for shape " +
                                shape_str(shape));
  Tensor t = empty(shape, DType::i32);
  std::copy(values.begin(), values.end(), t.data<std::int32_t>());
  return t;
}

Tensor Tensor::scalar(float value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::randn(const Shape& shape, Generator& gen, float mean, float std, DType dtype) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (auto& x : v) x = mean + std * gen.next_normal();
  return from_vector(v, shape, dtype);
}

Tensor Tensor::uniform(const Shape& shape, Generator& gen, float low, float high, DType dtype) {
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (auto& x : v) x = low + (high - low) * gen.next_float();
  return from_vector(v, shape, dtype);
}

Tensor Tensor::arange(std::int64_t n) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  return from_ints(v, {n});
}

// ---------------- metadata ----------------
std::int64_t Tensor::size(std::int64_t d) const { return shape()[wrap_dim(d, dim(), "size")]; }

bool Tensor::is_contiguous() const { return is_row_major(shape(), strides()); }

std::string Tensor::describe() const {
  if (!defined()) return "Tensor(undefined)";
  return "Tensor" + shape_str(shape()) + " " + dtype_name(dtype()) + " " + device().str();
}

void* Tensor::raw_data() const {
  const auto& im = impl();
  if (!im.storage->data()) {  // no bytes: an empty tensor, or a released one
    if (shape_numel(im.shape) == 0) return nullptr;
    throw std::runtime_error(im.name.empty() ? "tensor " + describe() + " is released; gather it before use"
                                             : "parameter '" + im.name + "' is released; gather it before use");
  }
  return static_cast<char*>(im.storage->data()) + im.offset * static_cast<std::int64_t>(dtype_size(im.dtype));
}

float Tensor::at(std::initializer_list<std::int64_t> index) const {
  if (static_cast<std::int64_t>(index.size()) != dim())
    throw std::invalid_argument("Tensor::at: " + std::to_string(index.size()) + " indices for " + describe());
  std::int64_t off = 0, d = 0;
  for (auto i : index) {
    if (i < 0 || i >= shape()[d])
      throw std::out_of_range("Tensor::at: index " + std::to_string(i) + " out of range in dim " +
                              std::to_string(d) + " of " + describe());
    off += i * strides()[d++];
  }
  return load_float(*this, off);
}

float Tensor::item() const {
  if (numel() != 1) throw std::invalid_argument("Tensor::item: tensor has " + std::to_string(numel()) + " elements");
  return load_float(*this, 0);
}

std::vector<float> Tensor::to_vector() const {
  std::vector<float> out(static_cast<std::size_t>(numel()));
  load_floats(*this, out.data());
  return out;
}

std::vector<std::int32_t> Tensor::to_int_vector() const {
  if (dtype() != DType::i32) throw std::invalid_argument("to_int_vector: tensor is " + describe());
  Tensor c = contiguous();
  const std::int32_t* p = c.data<std::int32_t>();
  return std::vector<std::int32_t>(p, p + numel());
}

// ---------------- views ----------------
Tensor Tensor::view(const Shape& shape_in) const {
  Shape shape = shape_in;
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("view: only one dimension can be -1 in " + shape_str(shape_in));
      infer = static_cast<std::int64_t>(i);
    } else if (shape[i] < 0) {
      throw std::invalid_argument("view: negative size in " + shape_str(shape_in) + " for " + describe());
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0 && known > 0 && numel() % known == 0) shape[infer] = numel() / known;
  if (shape_numel(shape) != numel() || (infer >= 0 && shape[infer] < 0))
    throw std::invalid_argument("view: shape " + shape_str(shape_in) + " is invalid for " + describe());
  if (!is_contiguous())
    throw std::invalid_argument("view: " + describe() + " is not contiguous; use reshape()");
  return make_view(*this, shape, contiguous_strides(shape), offset());
}

Tensor Tensor::reshape(const Shape& shape) const { return is_contiguous() ? view(shape) : contiguous().view(shape); }

Tensor Tensor::transpose(std::int64_t d0, std::int64_t d1) const {
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  // BEGIN SOLUTION L01.1
  Shape sh = shape(), st = strides();
  std::swap(sh[d0], sh[d1]);
  std::swap(st[d0], st[d1]);
  return make_view(*this, sh, st, offset());
  // END SOLUTION
}

Tensor Tensor::permute(const Shape& dims) const {
  if (static_cast<std::int64_t>(dims.size()) != dim())
    throw std::invalid_argument("permute: " + shape_str(dims) + " does not match " + describe());
  // BEGIN SOLUTION L01.1
  Shape sh(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    auto d = wrap_dim(dims[i], dim(), "permute");
    if (seen[d]) throw std::invalid_argument("permute: repeated dimension in " + shape_str(dims));
    seen[d] = true;
    sh[i] = shape()[d];
    st[i] = strides()[d];
  }
  return make_view(*this, sh, st, offset());
  // END SOLUTION
}

Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
  d = wrap_dim(d, dim(), "narrow");
  if (start < 0 || length < 0 || start + length > shape()[d])
    throw std::invalid_argument("narrow: [" + std::to_string(start) + ", " + std::to_string(start + length) +
                                ") out of range for dim " + std::to_string(d) + " of " + describe());
  // BEGIN SOLUTION L01.2
  Shape sh = shape();
  sh[d] = length;
  return make_view(*this, sh, strides(), offset() + start * strides()[d]);
  // END SOLUTION
}

Tensor Tensor::unsqueeze(std::int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  // BEGIN SOLUTION L01.2
  Shape sh = shape(), st = strides();
  std::int64_t stride = d < dim() ? shape()[d] * strides()[d] : 1;
  sh.insert(sh.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return make_view(*this, sh, st, offset());
  // END SOLUTION
}

Tensor Tensor::squeeze(std::int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  if (shape()[d] != 1) throw std::invalid_argument("squeeze: dim " + std::to_string(d) + " of " + describe() + " is not 1");
  Shape sh = shape(), st = strides();
  sh.erase(sh.begin() + d);
  st.erase(st.begin() + d);
  return make_view(*this, sh, st, offset());
}

Tensor Tensor::expand(const Shape& target) const {
  if (target.size() < shape().size())
    throw std::invalid_argument("expand: cannot expand " + describe() + " to " + shape_str(target));
  std::size_t lead = target.size() - shape().size();
  Shape sh = target, st(target.size(), 0);
  for (std::size_t i = 0; i < lead; ++i)
    if (sh[i] < 0)
      throw std::invalid_argument("expand: new leading dimension " + std::to_string(i) + " of " + shape_str(target) +
                                  " must be a size, not " + std::to_string(sh[i]));
  for (std::size_t i = 0; i < shape().size(); ++i) {
    std::int64_t s = shape()[i], t = target[lead + i];
    if (t == -1) t = sh[lead + i] = s;  // -1 keeps the size, as in PyTorch
    if (s == t)
      st[lead + i] = strides()[i];
    else if (s != 1 || t < 0)
      throw std::invalid_argument("expand: cannot expand " + describe() + " to " + shape_str(target));
  }
  return make_view(*this, sh, st, offset());
}

// ---------------- copies ----------------
Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType dt) const {
  if (dt == dtype()) return *this;
  Tensor out = empty(shape(), dt, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device dev) const {
  if (dev == device()) return *this;
  Tensor src = contiguous();
  Tensor out = empty(shape(), dtype(), dev);
  if (!src.device().is_cpu() && !dev.is_cpu()) return src.to(Device::cpu()).to(dev);  // through the host
  copy_between(out.raw_data(), dev, src.raw_data(), src.device(), nbytes(), src.storage()->tag());
  return out;
}

void Tensor::copy_(const Tensor& src) {
  if (src.shape() != shape())
    throw std::invalid_argument("copy_: shape " + shape_str(src.shape()) + " into " + describe());
  if (src.device() != device()) {
    if (src.dtype() == dtype() && src.is_contiguous() && is_contiguous() && (src.device().is_cpu() || device().is_cpu())) {
      // the bytes straight across (offload's gradient shard down, its parameters up): no staging copy
      copy_between(raw_data(), device(), src.raw_data(), src.device(), nbytes(), src.storage()->tag());
      return;
    }
    copy_(src.contiguous().to(device()));  // else move whole bytes first, then copy on our device
    return;
  }
  backend(device()).copy_(*this, src);
}

void Tensor::fill_(float value) { backend(device()).fill_(*this, value); }

// ---------------- autograd fields ----------------
Tensor& Tensor::set_requires_grad(bool on) {
  if (on && dtype() == DType::i32) throw std::invalid_argument("set_requires_grad: integer tensors have no gradient");
  if (!is_leaf()) throw std::invalid_argument("set_requires_grad: only leaf tensors can be marked (use detach())");
  impl().requires_grad = on;
  return *this;
}

Tensor Tensor::detach() const {
  return make_view(*this, shape(), strides(), offset());
}

HookHandle Tensor::register_grad_hook(GradHook hook) {
  if (!requires_grad() || !is_leaf())
    throw std::invalid_argument("register_grad_hook: only leaves that require grad have hooks");
  std::uint64_t id = impl().grad_hooks.add(std::move(hook));
  std::weak_ptr<TensorImpl> weak = impl_;  // the handle must not keep the tensor alive
  return HookHandle([weak, id] {
    if (auto im = weak.lock()) im->grad_hooks.remove(id);
  });
}

}  // namespace minitorch
