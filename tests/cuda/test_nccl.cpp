// L05 on a GPU: the NCCL process group (dist/nccl_group.h) on one rank — every collective form gives
// what the MPI group gives on the CPU (values, and the bytes it counts), its arguments are checked, a
// split works, and point to point says it is not written. One GPU allows one NCCL rank (NCCL refuses two
// ranks on one device), so what crosses ranks is the MPI group's, tested on 2 and 4 ranks in dist_mpi.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "dist/nccl_group.h"
#include "minitorch/not_implemented.h"
#include "minitorch/random.h"

namespace {
using namespace minitorch;
using namespace mt_cuda_test;

class L05_Nccl : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(dist::nccl_available()) << "this CUDA build has no NCCL (CMake: minitorch: NCCL OFF)";
    world_ = &dist::init(nullptr, nullptr);
    ASSERT_EQ(world_->size(), 1) << "run this suite as one process";
  }
  dist::ProcessGroup* world_ = nullptr;
};

// The same sequence of collectives on a group; returns every result on the host.
std::vector<Tensor> run_collectives(dist::ProcessGroup& g, const Tensor& x) {
  const Device d = g.device();
  std::vector<Tensor> out;
  Tensor a = x.to(d);
  g.all_reduce(a, dist::ReduceOp::sum);
  out.push_back(a);
  Tensor m = x.to(d);
  g.all_reduce_async(m, dist::ReduceOp::avg)->wait();
  out.push_back(m);
  Tensor mx = x.to(d);
  g.all_reduce(mx, dist::ReduceOp::max);  // ncclMax / MPI_MAX
  out.push_back(mx);
  out.push_back(g.reduce_scatter(x.to(d)));
  dist::AsyncTensor rs = g.reduce_scatter_async(x.to(d), dist::ReduceOp::avg);
  rs.work->wait();
  out.push_back(rs.tensor);
  Tensor whole = x.to(d), shard = whole.narrow(0, 0, x.numel());
  g.reduce_scatter_into(shard, whole);  // the output is the input's own chunk
  out.push_back(shard);
  out.push_back(g.all_gather(x.to(d), x.numel()));
  Tensor gathered = Tensor::zeros({x.numel()}, x.dtype(), d);
  g.all_gather_into_async(gathered, x.to(d))->wait();
  out.push_back(gathered);
  Tensor b = x.to(d);
  g.broadcast(b, 0);
  out.push_back(b);
  g.barrier();
  for (Tensor& t : out) t = t.to(Device::cpu());
  return out;
}

TEST_F(L05_Nccl, EveryCollectiveGivesWhatTheMpiGroupGives) {
  Generator gen(5);
  for (DType dt : {DType::f32, DType::bf16}) {
    auto nccl = dist::make_nccl_group(*world_, Device::cuda(0));
    auto mpi = world_->split(0, 0);
    EXPECT_EQ(nccl->device(), Device::cuda(0));
    const Tensor x = Tensor::randn({37}, gen, 0.f, 1.f, dt);
    const auto got = run_collectives(*nccl, x), want = run_collectives(*mpi, x);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].dtype(), want[i].dtype()) << i;
      EXPECT_EQ(got[i].to_vector(), want[i].to_vector()) << "result " << i << " " << dtype_name(dt);
    }
    EXPECT_EQ(nccl->stats().bytes, mpi->stats().bytes);
    EXPECT_EQ(nccl->stats().calls, mpi->stats().calls);
    EXPECT_EQ(nccl->stats().elements, mpi->stats().elements);
  }
}

TEST_F(L05_Nccl, ChecksItsTensorsAndSaysPointToPointIsNotWritten) {
  auto nccl = dist::make_nccl_group(*world_, Device::cuda(0));
  Tensor on_cpu = Tensor::zeros({4});
  try {
    nccl->all_reduce(on_cpu);
    ADD_FAILURE() << "a CPU tensor must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("expected a contiguous cuda:0 tensor, got a tensor on cpu"), std::string::npos)
        << e.what();
  }
  Tensor t = Tensor::zeros({4}, DType::f32, Device::cuda(0));
  EXPECT_THROW(nccl->send(t, 0), NotImplemented);
  EXPECT_THROW(dist::make_nccl_group(*world_, Device::cpu()), std::runtime_error);
}

TEST_F(L05_Nccl, SplitMakesAWorkingGroup) {
  auto nccl = dist::make_nccl_group(*world_, Device::cuda(0));
  nccl->set_timeout(30);
  auto sub = nccl->split(0, 0);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->size(), 1);
  EXPECT_EQ(sub->timeout(), 30);
  Tensor t = Tensor::full({5}, 2.f, DType::f32, Device::cuda(0));
  sub->all_reduce(t);
  EXPECT_EQ(t.to(Device::cpu()).to_vector(), std::vector<float>(5, 2.f));
  EXPECT_EQ(nccl->split(-1, 0), nullptr);
}

}  // namespace
