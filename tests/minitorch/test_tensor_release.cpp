// L01 — releasable tensor data (what ZeRO-3 does to a parameter between uses) and the ordered,
// removable hook lists that gradient and module hooks are made of.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "minitorch/allocator.h"
#include "minitorch/hooks.h"
#include "minitorch/tensor.h"

using namespace minitorch;

namespace {
template <typename F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

Tensor param_tensor(const std::vector<float>& v, const Shape& shape, const std::string& name) {
  TagScope scope(MemTag::param);
  Tensor t = Tensor::from_vector(v, shape);
  t.set_name(name);
  return t;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// release_data / set_data
// ---------------------------------------------------------------------------------------------

TEST(L01_TensorRelease, ReleaseFreesExactlyTheBytesAndKeepsTheMetadata) {
  Tensor w = param_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, "layer.weight");
  const TensorImpl* impl = w.impl_ptr().get();
  const std::int64_t before = memory_stats().current(MemTag::param);
  EXPECT_FALSE(w.is_released());
  w.release_data();
  EXPECT_EQ(memory_stats().current(MemTag::param), before - 24);
  EXPECT_TRUE(w.is_released());
  EXPECT_EQ(w.impl_ptr().get(), impl);
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  EXPECT_EQ(w.dtype(), DType::f32);
  EXPECT_TRUE(w.device().is_cpu());
  EXPECT_EQ(w.name(), "layer.weight");
  EXPECT_EQ(w.storage()->nbytes(), 0u);
  w.release_data();  // twice: nothing more to free
  EXPECT_EQ(memory_stats().current(MemTag::param), before - 24);
}

TEST(L01_TensorRelease, ReadingReleasedDataIsAClearError) {
  Tensor w = param_tensor({1, 2, 3}, {3}, "transformer.h.0.attn.c_attn.weight");
  w.release_data();
  const std::string msg = "parameter 'transformer.h.0.attn.c_attn.weight' is released; gather it before use";
  EXPECT_EQ(error_of([&] { w.to_vector(); }), msg);
  EXPECT_EQ(error_of([&] { w.clone(); }), msg);
  EXPECT_EQ(error_of([&] { w.data<float>(); }), msg);
  // a view taken after the release has no name of its own
  EXPECT_NE(error_of([&] { w.detach().to_vector(); }).find("is released; gather it before use"), std::string::npos);
  // an empty tensor has no bytes either, and is not released
  Tensor empty = Tensor::empty({0, 4});
  EXPECT_FALSE(empty.is_released());
  EXPECT_EQ(empty.raw_data(), nullptr);
}

TEST(L01_TensorRelease, ViewsTakenBeforeTheReleaseKeepTheirBytes) {
  Tensor w = param_tensor({1, 2, 3, 4}, {2, 2}, "w");
  const std::int64_t before = memory_stats().current(MemTag::param);
  Tensor view = w.transpose(0, 1);
  w.release_data();
  EXPECT_EQ(memory_stats().current(MemTag::param), before) << "the view still holds the storage";
  EXPECT_EQ(view.to_vector(), (std::vector<float>{1, 3, 2, 4}));
  view = Tensor();
  EXPECT_EQ(memory_stats().current(MemTag::param), before - 16);
}

TEST(L01_TensorRelease, SetDataRematerialisesInPlace) {
  Tensor w = param_tensor({1, 2, 3, 4, 5, 6}, {2, 3}, "w");
  Tensor handle = w;  // another holder of the same TensorImpl (an optimizer, a graph node)
  std::vector<float> values = w.to_vector();
  const std::int64_t before = memory_stats().current(MemTag::param);
  w.release_data();
  {
    TagScope scope(MemTag::param);
    w.set_data(Tensor::from_vector(values, {2, 3}));
  }
  EXPECT_EQ(memory_stats().current(MemTag::param), before);
  EXPECT_FALSE(handle.is_released());
  EXPECT_EQ(handle.to_vector(), values);
}

TEST(L01_TensorRelease, SetDataToAViewOfAFlatBuffer) {
  // ZeRO-3: parameters become views into one gathered buffer.
  Tensor a = param_tensor({0, 0, 0, 0}, {2, 2}, "a"), b = param_tensor({0, 0, 0}, {3}, "b");
  Tensor flat = Tensor::from_vector({1, 2, 3, 4, 5, 6, 7}, {7});
  a.set_data(flat.narrow(0, 0, 4).view({2, 2}));
  b.set_data(flat.narrow(0, 4, 3));
  EXPECT_EQ(a.to_vector(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(b.to_vector(), (std::vector<float>{5, 6, 7}));
  EXPECT_EQ(b.offset(), 4);
  b.fill_(0.f);  // writes go to the buffer
  EXPECT_EQ(flat.to_vector(), (std::vector<float>{1, 2, 3, 4, 0, 0, 0}));
  // a transposed source keeps its strides
  Tensor c = param_tensor({0, 0, 0, 0}, {2, 2}, "c");
  c.set_data(Tensor::from_vector({1, 2, 3, 4}, {2, 2}).transpose(0, 1));
  EXPECT_EQ(c.to_vector(), (std::vector<float>{1, 3, 2, 4}));
}

TEST(L01_TensorRelease, SetDataChecksShapeAndDType) {
  Tensor w = param_tensor({1, 2, 3, 4}, {2, 2}, "layer.weight");
  EXPECT_THROW(w.set_data(Tensor::zeros({4})), std::invalid_argument);
  EXPECT_THROW(w.set_data(Tensor::zeros({2, 2}, DType::bf16)), std::invalid_argument);
  EXPECT_THROW(w.set_data(Tensor()), std::invalid_argument);
  EXPECT_NE(error_of([&] { w.set_data(Tensor::zeros({3})); }).find("'layer.weight'"), std::string::npos);
  EXPECT_EQ(w.to_vector(), (std::vector<float>{1, 2, 3, 4}));  // unchanged
}

// ---------------------------------------------------------------------------------------------
// HookList / HookHandle
// ---------------------------------------------------------------------------------------------

namespace {
/// A list that owns itself through a shared_ptr, as TensorImpl and ModuleHooks do.
struct Owner {
  HookList<void(std::string&)> list;
};
HookHandle add(const std::shared_ptr<Owner>& o, std::function<void(std::string&)> fn) {
  std::uint64_t id = o->list.add(std::move(fn));
  std::weak_ptr<Owner> weak = o;
  return HookHandle([weak, id] {
    if (auto s = weak.lock()) s->list.remove(id);
  });
}
}  // namespace

TEST(L01_Hooks, CallInRegistrationOrderUntilTheHandleGoes) {
  auto o = std::make_shared<Owner>();
  std::string log;
  HookHandle a = add(o, [](std::string& s) { s += "a"; });
  {
    HookHandle b = add(o, [](std::string& s) { s += "b"; });
    HookHandle c = add(o, [](std::string& s) { s += "c"; });
    o->list.call(log);
    EXPECT_EQ(log, "abc");
    EXPECT_EQ(o->list.size(), 3u);
  }
  log.clear();
  o->list.call(log);
  EXPECT_EQ(log, "a");
  a.remove();
  EXPECT_FALSE(a.active());
  a.remove();  // idempotent
  EXPECT_TRUE(o->list.empty());
}

TEST(L01_Hooks, MovedHandleOwnsTheRegistration) {
  auto o = std::make_shared<Owner>();
  std::string log;
  std::vector<HookHandle> handles;
  {
    HookHandle h = add(o, [](std::string& s) { s += "x"; });
    handles.push_back(std::move(h));
    EXPECT_FALSE(h.active());  // NOLINT: moved-from on purpose
  }
  o->list.call(log);
  EXPECT_EQ(log, "x");
  HookHandle other = add(o, [](std::string& s) { s += "y"; });
  handles[0] = std::move(other);  // assigning removes what the target held
  log.clear();
  o->list.call(log);
  EXPECT_EQ(log, "y");
}

TEST(L01_Hooks, RemovingAndAddingWhileCalling) {
  auto o = std::make_shared<Owner>();
  std::string log;
  HookHandle b, self, added;
  HookHandle a = add(o, [&](std::string& s) {
    s += "a";
    b.remove();  // not run yet in this call: skipped
    if (!added.active()) added = add(o, [](std::string& t) { t += "n"; });  // runs from the next call
  });
  b = add(o, [](std::string& s) { s += "b"; });
  self = add(o, [&](std::string& s) {
    s += "s";
    self.remove();  // removes itself while running
  });
  o->list.call(log);
  EXPECT_EQ(log, "as");
  log.clear();
  o->list.call(log);
  EXPECT_EQ(log, "an");
}

TEST(L01_Hooks, HandleOutlivingItsOwnerRemovesNothing) {
  HookHandle h;
  {
    auto o = std::make_shared<Owner>();
    h = add(o, [](std::string&) {});
  }
  EXPECT_TRUE(h.active());
  h.remove();  // the owner is gone: a no-op, not a crash
  EXPECT_FALSE(h.active());
}
