// all_reduce across the IPUs of a replica, the collective of tensor-parallel layers: every IPU
// gets the reduction in input order, per replica; the three variants' gradients; its price as
// a ring over the IPU-Links of the IPUs it spans.
#include "helpers.hpp"
#include "reference.hpp"
#include "replicated_reference.hpp"

#include "pxl/emu/cost_model.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

using namespace pxl;

namespace test_ipu_all_reduce {

/// x_i, a (2, 3) stream loaded on IPU i of `ipus`, on 2 replicas; y_i, from IPU i, is the
/// all-reduce across the IPUs (the variant's forward) of every x_j.
struct IpuAllReduce {
  Ir ir{2};
  std::vector<HostToDeviceStream> xs;
  std::vector<DeviceToHostStream> ys;

  IpuAllReduce(std::int64_t ipus, CollectiveOperator op, DType dtype,
               AllReduceVariant variant = AllReduceVariant::none) {
    auto in_main = ir.main_graph().scope();
    std::vector<Tensor> loaded;
    for (std::int64_t i = 0; i < ipus; ++i) {
      auto on = ipu(i);
      xs.push_back(h2d_stream({2, 3}, dtype, "x" + std::to_string(i)));
      loaded.push_back(ops::host_load(xs.back()));
    }
    const auto reduce = variant == AllReduceVariant::identical_inputs
                            ? ops::collectives::all_reduce_identical_inputs
                        : variant == AllReduceVariant::identical_grad_inputs
                            ? ops::collectives::all_reduce_identical_grad_inputs
                            : ops::collectives::all_reduce;
    const std::vector<Tensor> reduced = reduce(loaded, std::nullopt, op);
    for (std::int64_t i = 0; i < ipus; ++i) {
      auto on = ipu(i);
      REQUIRE(reduced[static_cast<std::size_t>(i)].ipu() == i);
      ys.push_back(d2h_stream({2, 3}, dtype, "y" + std::to_string(i)));
      ops::host_store(ys.back(), reduced[static_cast<std::size_t>(i)]);
    }
  }
};

/// Replica-major data of 2 replicas of (2, 3) for IPU `i`: distinct per IPU and replica.
HostTensor ipu_data(std::int64_t i, DType dtype) {
  HostTensor t({2, 2, 3}, float32);
  auto d = t.data<float>();
  for (std::size_t k = 0; k < d.size(); ++k)
    d[k] = static_cast<float>(static_cast<int>((k * 37 + static_cast<std::size_t>(i) * 11) % 23) -
                              11) /
           (dtype == int32 ? 1.f : 7.f);
  return t.astype(dtype);
}

/// y_i of every IPU, run on `workers` workers.
std::vector<HostTensor> run_ipu_all_reduce(IpuAllReduce& p, DType dtype, unsigned workers) {
  Session s(p.ir, "ipu_model", {.workers = workers, .oversubscribe = true});
  auto attached = s.attach();
  StreamInputs feeds;
  for (std::size_t i = 0; i < p.xs.size(); ++i)
    feeds.emplace(p.xs[i], ipu_data(static_cast<std::int64_t>(i), dtype));
  const auto out = s.run(feeds);
  std::vector<HostTensor> ys;
  for (const auto& y : p.ys)
    ys.push_back(out.at(y));
  return ys;
}

TEST_CASE("all_reduce across IPUs: every IPU gets the reduction in input order, per replica") {
  struct Case {
    CollectiveOperator op;
    DType dtype;
  };
  for (const Case c :
       {Case{CollectiveOperator::add, float32}, Case{CollectiveOperator::mean, float32},
        Case{CollectiveOperator::max, float16}, Case{CollectiveOperator::add, int32},
        Case{CollectiveOperator::square_add, float32}}) {
    CAPTURE(static_cast<int>(c.op));
    CAPTURE(name(c.dtype));
    IpuAllReduce p(3, c.op, c.dtype);
    const auto ys = run_ipu_all_reduce(p, c.dtype, 1);
    // The closed form: the three IPUs' values of each replica's element, combined in double in
    // IPU order and rounded once to the dtype.
    std::vector<HostTensor> xs;
    for (std::int64_t i = 0; i < 3; ++i)
      xs.push_back(ipu_data(i, c.dtype).astype(float32));
    HostTensor expected({2, 2, 3}, float32);
    for (std::int64_t e = 0; e < 12; ++e) {
      double acc = 0;
      for (std::int64_t i = 0; i < 3; ++i) {
        const double v = static_cast<double>(HostTensor(xs[static_cast<std::size_t>(i)]).item(e));
        const double x =
            c.dtype == float16
                ? static_cast<double>(static_cast<float>(HostTensor({static_cast<float>(v)}, {1})
                                                             .astype(float16)
                                                             .astype(float32)
                                                             .item(0)))
                : v;
        acc = i == 0 ? (c.op == CollectiveOperator::square_add ? x * x : x)
              : c.op == CollectiveOperator::max        ? std::max(acc, x)
              : c.op == CollectiveOperator::square_add ? acc + x * x
                                                       : acc + x;
      }
      if (c.op == CollectiveOperator::mean)
        acc /= 3;
      expected.data<float>()[static_cast<std::size_t>(e)] = static_cast<float>(acc);
    }
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(ys[i] == expected.astype(c.dtype));
      CHECK(ys[i] == ys[0]);
    }
    // The same bits on any number of workers, and the reference evaluator's result.
    CHECK(run_ipu_all_reduce(p, c.dtype, 3) == ys);
    const auto ref = testing::run_replicated(
        p.ir,
        {{"x0", ipu_data(0, c.dtype)}, {"x1", ipu_data(1, c.dtype)}, {"x2", ipu_data(2, c.dtype)}});
    for (std::size_t i = 0; i < 3; ++i)
      CHECK(ref.at("y" + std::to_string(i)) == ys[i]);
  }
  // identical_inputs: the identity on every IPU; identical_grad_inputs: the all-reduce.
  IpuAllReduce same(2, CollectiveOperator::add, float32, AllReduceVariant::identical_inputs);
  const auto ident = run_ipu_all_reduce(same, float32, 2);
  CHECK(ident[0] == ipu_data(0, float32));
  CHECK(ident[1] == ipu_data(1, float32));
  IpuAllReduce grad_same(2, CollectiveOperator::add, float32,
                         AllReduceVariant::identical_grad_inputs);
  IpuAllReduce plain(2, CollectiveOperator::add, float32);
  CHECK(run_ipu_all_reduce(grad_same, float32, 2) == run_ipu_all_reduce(plain, float32, 2));
}

TEST_CASE("all_reduce across IPUs: the gradients of the three variants, in closed form") {
  // Loss Σ_i <w_i, y_i>: plain add gives dx_j = Σ_i w_i, mean (Σ_i w_i) / 2, identical inputs
  // (y_i = x_i forward) Σ_i w_i too, identical grad inputs dx_j = w_j.
  struct Case {
    AllReduceVariant variant;
    CollectiveOperator op;
  };
  for (const Case c : {Case{AllReduceVariant::none, CollectiveOperator::add},
                       Case{AllReduceVariant::none, CollectiveOperator::mean},
                       Case{AllReduceVariant::identical_inputs, CollectiveOperator::add},
                       Case{AllReduceVariant::identical_grad_inputs, CollectiveOperator::add}}) {
    CAPTURE(static_cast<int>(c.variant));
    Ir ir;
    HostToDeviceStream x0, x1, w0, w1;
    DeviceToHostStream dx0, dx1;
    {
      auto main = ir.main_graph().scope();
      Graph fwd = ir.create_graph(
          "f",
          [&](Tensor a, Tensor b) {
            const auto reduce = c.variant == AllReduceVariant::identical_inputs
                                    ? ops::collectives::all_reduce_identical_inputs
                                : c.variant == AllReduceVariant::identical_grad_inputs
                                    ? ops::collectives::all_reduce_identical_grad_inputs
                                    : ops::collectives::all_reduce;
            return reduce({a, ops::ipu_copy(b, 1)}, std::vector<std::int64_t>{0, 1}, c.op);
          },
          TensorSpec{{3}, float32}, TensorSpec{{3}, float32});
      const auto info = transforms::autodiff(fwd);
      x0 = h2d_stream({3}, float32, "x0");
      x1 = h2d_stream({3}, float32, "x1");
      w0 = h2d_stream({3}, float32, "w0");
      const auto call = ops::call_with_info(fwd, {ops::host_load(x0), ops::host_load(x1)});
      Tensor loaded_w1;
      {
        auto on = ipu(1); // the gradient of y_1 lives where y_1 does
        w1 = h2d_stream({3}, float32, "w1");
        loaded_w1 = ops::host_load(w1);
      }
      const auto dx =
          ops::call(info.graph(), {ops::host_load(w0), loaded_w1}, info.inputs_dict(call));
      dx0 = d2h_stream({3}, float32, "dx0");
      dx1 = d2h_stream({3}, float32, "dx1");
      ops::host_store(dx0, dx[0]);
      ops::host_store(dx1, dx[1]);
    }
    Session s(ir, "ipu_model", {.workers = 2, .oversubscribe = true});
    auto attached = s.attach();
    const HostTensor wa({0.5f, -1.25f, 3.f}, {3}), wb({0.25f, 2.f, -0.75f}, {3});
    const auto out = s.run({{x0, HostTensor({1.f, 2.f, 3.f}, {3})},
                            {x1, HostTensor({4.f, 5.f, 6.f}, {3})},
                            {w0, wa},
                            {w1, wb}});
    HostTensor sum({3}, float32);
    for (std::int64_t i = 0; i < 3; ++i)
      sum.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>(
          (wa.item(i) + wb.item(i)) / (c.op == CollectiveOperator::mean ? 2.0 : 1.0));
    const bool identity = c.variant == AllReduceVariant::identical_grad_inputs;
    CHECK(out.at(dx0) == (identity ? wa : sum));
    CHECK(out.at(dx1) == (identity ? wb : sum));
  }
}

TEST_CASE("all_reduce across IPUs is priced as a ring over the IPU-Links of the IPUs it spans") {
  struct Spans final : emu::StepObserver {
    std::map<OpKind, emu::StepInfo> steps;
    void on_step(const emu::StepInfo& info, const emu::StepTiming&, std::int64_t) override {
      steps[info.op_kind] = info;
    }
  };
  IpuAllReduce p(3, CollectiveOperator::add, float32);
  Session s(p.ir, "ipu_model", {.workers = 1});
  auto attached = s.attach();
  StreamInputs feeds;
  for (std::size_t i = 0; i < 3; ++i)
    feeds.emplace(p.xs[i], ipu_data(static_cast<std::int64_t>(i), float32));
  Spans spans;
  s.run(feeds, &spans);
  const emu::StepInfo& reduce = spans.steps.at(OpKind::AllReduce);
  CHECK(reduce.ipus == 3);
  CHECK(reduce.flops == 2 * 6); // two additions per element
  CHECK(spans.steps.at(OpKind::HostLoad).ipus == 1);
  // Each IPU sends 2 (n - 1) / n of its 24 bytes over its own link at once: 32 bytes.
  const emu::Target target;
  const double seconds = 32.0 / target.ipu_link_bytes_per_second;
  CHECK(emu::estimate(reduce, target).exchange ==
        std::llround(std::ceil(seconds * target.clock_hz)));
}

} // namespace test_ipu_all_reduce
