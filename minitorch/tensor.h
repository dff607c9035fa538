#pragma once
/// \file tensor.h
/// The Tensor: a cheap handle to (shared storage, shape, strides, offset, dtype, device) plus the
/// autograd fields. Copying a Tensor copies the handle, not the data. Views (reshape of a contiguous
/// tensor, transpose, permute, narrow, unsqueeze, expand) share storage; every op returns a new
/// contiguous tensor.
///
/// \code
///   using namespace minitorch;
///   Generator gen(1337);
///   Tensor x = Tensor::randn({2, 3}, gen);          // f32 on the CPU, N(0, 1)
///   Tensor xt = x.transpose(0, 1);                  // (3, 2) view, same storage, strides {1, 3}
///   Tensor y = xt.contiguous();                     // copy into row-major order
///   float v = x.at({1, 2});                         // element read through strides
///   Tensor h = x.to(DType::bf16);                   // 2 bytes per element
/// \endcode
///
/// The methods here do no autograd bookkeeping; the differentiable versions of view ops live in
/// autograd/functions.h. The autograd fields (requires_grad, grad, grad_fn, hooks) live here so a
/// tensor carries its place in the graph, as in PyTorch.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "minitorch/device.h"
#include "minitorch/dtype.h"
#include "minitorch/hooks.h"
#include "minitorch/storage.h"

namespace minitorch {

namespace autograd {
struct Node;  // defined in autograd/node.h; a tensor only holds a pointer to its creator.
}

using Shape = std::vector<std::int64_t>;
/// "(2, 3, 4)".
std::string shape_str(const Shape& shape);
/// Product of the sizes (1 for a scalar shape {}).
std::int64_t shape_numel(const Shape& shape);
/// Row-major strides for a shape.
Shape contiguous_strides(const Shape& shape);

class Generator;
class Tensor;

/// Called with the leaf tensor when its gradient is final for this backward pass.
using GradHook = std::function<void(Tensor&)>;
/// A leaf's gradient hooks, in registration order.
using GradHookList = HookList<void(Tensor&)>;

/// Everything a Tensor handle points to. Users go through Tensor.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;  // in elements
  std::int64_t offset = 0;  // in elements
  DType dtype = DType::f32;
  // autograd
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;            // accumulated gradient of a leaf
  std::shared_ptr<autograd::Node> grad_fn;     // the op that produced this tensor (null for leaves)
  GradHookList grad_hooks;                     // fired when the leaf's gradient is final
  std::string name;                            // parameter name, for traces and errors
};

class Tensor {
 public:
  /// An undefined tensor (like a null pointer); `defined()` is false.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- creation (allocations are tagged with the current TagScope) ----
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, float value, DType dtype = DType::f32, Device device = Device::cpu());
  /// Copies `values` (row-major) into a new tensor of `shape` (and converts to `dtype`).
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape, DType dtype = DType::f32);
  static Tensor from_ints(const std::vector<std::int32_t>& values, const Shape& shape);
  static Tensor scalar(float value, DType dtype = DType::f32);
  /// N(mean, std²) samples from `gen` (f32 drawn, then converted to `dtype`).
  static Tensor randn(const Shape& shape, Generator& gen, float mean = 0.f, float std = 1.f,
                      DType dtype = DType::f32);
  /// U[low, high) samples from `gen`.
  static Tensor uniform(const Shape& shape, Generator& gen, float low = 0.f, float high = 1.f,
                        DType dtype = DType::f32);
  /// 0, 1, ..., n-1 as i32.
  static Tensor arange(std::int64_t n);

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  std::int64_t offset() const { return impl().offset; }
  std::int64_t dim() const { return static_cast<std::int64_t>(impl().shape.size()); }
  /// Size of dimension `d`; negative `d` counts from the end.
  std::int64_t size(std::int64_t d) const;
  std::int64_t numel() const { return shape_numel(impl().shape); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype()); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }
  /// "Tensor(2, 3) f32 cpu".
  std::string describe() const;

  // ---- data access ----
  /// Pointer to the first element (storage + offset). Checks that T matches the dtype.
  template <typename T>
  T* data() const;
  void* raw_data() const;
  /// Element at a multi-index, through strides, converted to float.
  float at(std::initializer_list<std::int64_t> index) const;
  /// The value of a one-element tensor.
  float item() const;
  /// All elements in row-major order, converted to float.
  std::vector<float> to_vector() const;
  std::vector<std::int32_t> to_int_vector() const;

  // ---- views: share storage, no copy ----
  /// Same data with a new shape; one size may be -1. Requires a contiguous tensor (else use reshape).
  Tensor view(const Shape& shape) const;
  /// view() if contiguous, else a contiguous copy reshaped.
  Tensor reshape(const Shape& shape) const;
  Tensor transpose(std::int64_t d0, std::int64_t d1) const;
  Tensor permute(const Shape& dims) const;
  /// Elements [start, start + length) of dimension `dim`.
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor squeeze(std::int64_t dim) const;
  /// Broadcast size-1 dimensions to `shape` with stride 0 (read-only view).
  Tensor expand(const Shape& shape) const;

  // ---- copies ----
  /// Row-major copy (returns *this if already contiguous).
  Tensor contiguous() const;
  /// Always a new contiguous copy.
  Tensor clone() const;
  /// Converted copy (returns *this if the dtype already matches).
  Tensor to(DType dtype) const;
  /// Copy on another device (returns *this if already there).
  Tensor to(Device device) const;
  /// Copies `src` (same shape, any dtype / strides) into this tensor's elements.
  void copy_(const Tensor& src);
  void fill_(float value);
  void zero_() { fill_(0.f); }

  // ---- autograd fields (the engine is in autograd/) ----
  bool requires_grad() const { return impl().requires_grad; }
  /// Marks a leaf as a parameter to differentiate. Returns *this for chaining.
  Tensor& set_requires_grad(bool on = true);
  /// The accumulated gradient (undefined until a backward reaches this leaf).
  Tensor grad() const { return Tensor(impl().grad); }
  void set_grad(const Tensor& g) { impl().grad = g.impl_; }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl().grad_fn; }
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  /// Same storage and view, cut from the graph (no grad_fn, requires_grad false).
  Tensor detach() const;
  /// Registers a hook called when this leaf's gradient is final for the current backward (not by
  /// autograd::grad, which accumulates nothing). Hooks run in registration order. The hook stays
  /// while the returned handle lives; removing it, even from a running hook, is safe.
  [[nodiscard]] HookHandle register_grad_hook(GradHook hook);
  const std::string& name() const { return impl().name; }
  void set_name(const std::string& n) { impl().name = n; }

  // ---- releasable data (ZeRO-3 parameters; PyTorch's `param.data = ...`) ----
  /// Drops this tensor's bytes: the storage becomes an empty one on the same device, while shape,
  /// dtype, name, grad and hooks stay. The memory goes back to the allocator when no other view
  /// holds it (graph nodes refer to a parameter, not to its bytes: autograd/node.h SavedTensor).
  /// Reading the data afterwards throws "parameter '<name>' is released; gather it before use".
  void release_data();
  /// True after release_data(), until set_data() gives the tensor data again.
  bool is_released() const;
  /// Makes this tensor use `src`'s storage, offset and strides; the shapes and dtypes must match.
  /// The TensorImpl stays the same, so the optimizer, hooks and graph nodes holding this tensor see
  /// the new bytes. ZeRO-3 points a parameter into a gathered flat buffer this way.
  ///   src: same shape and dtype as this tensor, any strides, offset and device
  void set_data(const Tensor& src);

  TensorImpl& impl() const;
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  /// True if both handles point to the same TensorImpl.
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

/// Element-type check for Tensor::data<T>(): throws if T does not match `dtype`.
void check_data_type(DType dtype, std::size_t sizeof_t, bool is_float, bool is_int);

template <typename T>
T* Tensor::data() const {
  check_data_type(dtype(), sizeof(T), std::is_same_v<T, float>, std::is_same_v<T, std::int32_t>);
  return static_cast<T*>(raw_data());
}

}  // namespace minitorch
