// Handles that name nothing: every public method of Tensor, Graph, Op, the two stream kinds and
// RemoteBuffer, and every Session call taking one, throws GraphError naming the handle's kind
// and the call when the handle is empty (default-constructed) or its Ir is gone.
#include "pxl/pxl.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using namespace pxl;

// Handles stay small values: the generation fits beside the index, where padding was.
static_assert(std::is_trivially_copyable_v<Tensor> && std::is_trivially_copyable_v<Graph> &&
              std::is_trivially_copyable_v<Op> && std::is_trivially_copyable_v<RemoteBuffer> &&
              std::is_trivially_copyable_v<HostToDeviceStream> &&
              std::is_trivially_copyable_v<DeviceToHostStream>);
static_assert(sizeof(Tensor) == 16 && sizeof(Graph) == 16 && sizeof(Op) == 16);

namespace {

/// One handle of each kind, of `y = sub(x + w)` streamed in and out, with `sub(x) = x * 2`,
/// and a remote buffer.
struct Handles {
  Graph main, sub;
  Tensor w, y;
  Op call;
  HostToDeviceStream in;
  DeviceToHostStream out;
  RemoteBuffer buffer;
};

struct Program : Handles {
  Ir ir;
};

std::unique_ptr<Program> make_program() {
  auto p = std::make_unique<Program>();
  auto scope = p->ir.main_graph().scope();
  p->main = p->ir.main_graph();
  p->sub = p->ir.create_graph(
      "sub", [](Tensor x) { return x * 2.0; }, TensorSpec{{2}, float32});
  p->in = h2d_stream({2}, float32, "in");
  p->out = d2h_stream({2}, float32, "out");
  p->buffer = remote_buffer({2}, float32, 1, "buffer");
  p->w = variable(HostTensor({1.f, 2.f}), "w");
  p->y = ops::call(p->sub, {ops::host_load(p->in) + p->w})[0];
  p->call = *p->y.producer();
  ops::host_store(p->out, p->y);
  return p;
}

/// The handles of a program whose Ir has been destroyed, and a new program made in its place
/// (its Ir's storage takes the freed slot: the old handles must not mistake it for theirs).
struct Dangling {
  Handles handles;
  std::unique_ptr<Program> successor;
};

Dangling make_dangling() {
  auto p = make_program();
  Dangling d{.handles = *p, .successor = nullptr};
  p.reset();
  d.successor = make_program();
  return d;
}

const std::string empty_says = " handle is empty (default-constructed, or the ";
const std::string gone_says = " handle's Ir has been destroyed, and no Session keeps it";

/// `call` throws GraphError whose message names `where` (the call, "Tensor::spec()") and
/// `kind`, and says the handle is empty (`empty`) or its Ir gone.
void check_unusable(const std::function<void()>& call, const std::string& where,
                    const std::string& kind, bool empty) {
  CAPTURE(where);
  try {
    call();
    FAIL("no exception");
  } catch (const GraphError& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(message.find(where + ": ") != std::string::npos);
    CHECK(message.find("the " + kind + (empty ? empty_says : gone_says)) != std::string::npos);
  } catch (const std::exception& e) {
    FAIL("another exception: " << e.what());
  }
}

template <typename Handle>
using Calls = std::vector<std::pair<std::string, std::function<void(const Handle&)>>>;

template <typename Handle>
void check_all(const Calls<Handle>& calls, const Handle& h, const std::string& kind, bool empty) {
  CHECK_FALSE(h.valid());
  for (const auto& [where, call] : calls)
    check_unusable([&, &call = call] { call(h); }, where, kind, empty);
}

Calls<Tensor> tensor_calls() {
  const Tensor other; // the operators check their left operand first
  return {
      {"Tensor::spec()", [](const Tensor& t) { (void)t.spec(); }},
      {"Tensor::shape()", [](const Tensor& t) { (void)t.shape(); }},
      {"Tensor::dtype()", [](const Tensor& t) { (void)t.dtype(); }},
      {"Tensor::rank()", [](const Tensor& t) { (void)t.rank(); }},
      {"Tensor::nelms()", [](const Tensor& t) { (void)t.nelms(); }},
      {"Tensor::meta_shape()", [](const Tensor& t) { (void)t.meta_shape(); }},
      {"Tensor::id()", [](const Tensor& t) { (void)t.id(); }},
      {"Tensor::name()", [](const Tensor& t) { (void)t.name(); }},
      {"Tensor::graph()", [](const Tensor& t) { (void)t.graph(); }},
      {"Tensor::ipu()", [](const Tensor& t) { (void)t.ipu(); }},
      {"Tensor::is_variable()", [](const Tensor& t) { (void)t.is_variable(); }},
      {"Tensor::is_constant()", [](const Tensor& t) { (void)t.is_constant(); }},
      {"Tensor::is_graph_input()", [](const Tensor& t) { (void)t.is_graph_input(); }},
      {"Tensor::producer()", [](const Tensor& t) { (void)t.producer(); }},
      {"Tensor::reshape()", [](const Tensor& t) { (void)t.reshape({2}); }},
      {"Tensor::transpose()", [](const Tensor& t) { (void)t.transpose(); }},
      {"Tensor::transpose()", [](const Tensor& t) { (void)t.T(); }},
      {"Tensor::flatten()", [](const Tensor& t) { (void)t.flatten(); }},
      {"Tensor::detach()", [](const Tensor& t) { (void)t.detach(); }},
      {"Tensor::operator[]", [](const Tensor& t) { (void)t[0]; }},
      {"Tensor::slice()", [](const Tensor& t) { (void)t.slice(0, 1); }},
      {"Tensor operator+", [other](const Tensor& t) { (void)(t + other); }},
      {"Tensor operator-", [other](const Tensor& t) { (void)(t - other); }},
      {"Tensor operator*", [other](const Tensor& t) { (void)(t * other); }},
      {"Tensor operator/", [other](const Tensor& t) { (void)(t / other); }},
      {"Tensor operator+", [](const Tensor& t) { (void)(t + 1.0); }},
      {"Tensor operator-", [](const Tensor& t) { (void)(t - 1.0); }},
      {"Tensor operator*", [](const Tensor& t) { (void)(t * 2.0); }},
      {"Tensor operator/", [](const Tensor& t) { (void)(t / 2.0); }},
      {"Tensor operator+", [](const Tensor& t) { (void)(1.0 + t); }},
      {"Tensor operator-", [](const Tensor& t) { (void)(1.0 - t); }},
      {"Tensor operator*", [](const Tensor& t) { (void)(2.0 * t); }},
      {"Tensor operator/", [](const Tensor& t) { (void)(2.0 / t); }},
      {"Tensor operator-", [](const Tensor& t) { (void)(-t); }},
      {"Tensor operator+=", [other](Tensor t) { t += other; }},
      {"Tensor operator+=", [](Tensor t) { t += 1.0; }},
      {"Tensor operator-=", [other](Tensor t) { t -= other; }},
      {"Tensor operator-=", [](Tensor t) { t -= 1.0; }},
      {"Tensor operator*=", [other](Tensor t) { t *= other; }},
      {"Tensor operator*=", [](Tensor t) { t *= 2.0; }},
  };
}

Calls<Graph> graph_calls() {
  return {
      {"Graph::scope()", [](const Graph& g) { auto s = g.scope(); }},
      {"Graph::name()", [](const Graph& g) { (void)g.name(); }},
      {"Graph::is_main()", [](const Graph& g) { (void)g.is_main(); }},
      {"Graph::ir()", [](const Graph& g) { (void)g.ir(); }},
      {"Graph::inputs()", [](const Graph& g) { (void)g.inputs(); }},
      {"Graph::outputs()", [](const Graph& g) { (void)g.outputs(); }},
      {"Graph::input_is_by_ref()", [](const Graph& g) { (void)g.input_is_by_ref(0); }},
      {"Graph::tensors()", [](const Graph& g) { (void)g.tensors(); }},
      {"Graph::variables()", [](const Graph& g) { (void)g.variables(); }},
      {"Graph::constants()", [](const Graph& g) { (void)g.constants(); }},
      {"Graph::ops()", [](const Graph& g) { (void)g.ops(); }},
      {"Graph::called_graphs()", [](const Graph& g) { (void)g.called_graphs(); }},
      {"Graph::contains()", [](const Graph& g) { (void)g.contains(Tensor{}); }},
      {"Graph::print_schedule()", [](const Graph& g) { (void)g.print_schedule(); }},
  };
}

Calls<Op> op_calls() {
  return {
      {"Op::kind()", [](const Op& o) { (void)o.kind(); }},
      {"Op::debug_name()", [](const Op& o) { (void)o.debug_name(); }},
      {"Op::name()", [](const Op& o) { (void)o.name(); }},
      {"Op::graph()", [](const Op& o) { (void)o.graph(); }},
      {"Op::inputs()", [](const Op& o) { (void)o.inputs(); }},
      {"Op::outputs()", [](const Op& o) { (void)o.outputs(); }},
      {"Op::input()", [](const Op& o) { (void)o.input(0); }},
      {"Op::output()", [](const Op& o) { (void)o.output(0); }},
      {"Op::num_inputs()", [](const Op& o) { (void)o.num_inputs(); }},
      {"Op::num_outputs()", [](const Op& o) { (void)o.num_outputs(); }},
      {"Op::attrs()", [](const Op& o) { (void)o.attrs(); }},
      {"Op::kind()", [](const Op& o) { (void)o.attrs<OpKind::Call>(); }},
      {"Op::attrs()", [](const Op& o) { (void)o.attrs_as<CallAttrs>(); }},
      {"Op::ipu()", [](const Op& o) { (void)o.ipu(); }},
      {"Op::pipeline_stage()", [](const Op& o) { (void)o.pipeline_stage(); }},
      {"Op::after()", [](const Op& o) { (void)o.after(); }},
      {"Op::called_graph()", [](const Op& o) { (void)o.called_graph(); }},
      {"Op::called_graphs()", [](const Op& o) { (void)o.called_graphs(); }},
  };
}

template <typename Stream>
Calls<Stream> stream_calls(const std::string& kind) {
  return {
      {kind + "::name()", [](const Stream& s) { (void)s.name(); }},
      {kind + "::spec()", [](const Stream& s) { (void)s.spec(); }},
      {kind + "::shape()", [](const Stream& s) { (void)s.shape(); }},
      {kind + "::dtype()", [](const Stream& s) { (void)s.dtype(); }},
  };
}

Calls<RemoteBuffer> remote_buffer_calls() {
  return {
      {"RemoteBuffer::name()", [](const RemoteBuffer& b) { (void)b.name(); }},
      {"RemoteBuffer::spec()", [](const RemoteBuffer& b) { (void)b.spec(); }},
      {"RemoteBuffer::shape()", [](const RemoteBuffer& b) { (void)b.shape(); }},
      {"RemoteBuffer::dtype()", [](const RemoteBuffer& b) { (void)b.dtype(); }},
      {"RemoteBuffer::entries()", [](const RemoteBuffer& b) { (void)b.entries(); }},
  };
}

/// The calls of the current graph's Ir that take a handle: `main` is a graph scope of a live
/// Ir, so that only the handle is at fault.
Calls<RemoteBuffer> remote_buffer_uses() {
  return {
      {"remote_variable",
       [](const RemoteBuffer& b) { (void)remote_variable(HostTensor({2}, float32), b); }},
      {"RemoteLoad", [](const RemoteBuffer& b) { (void)ops::remote_load(b, 0); }},
  };
}

} // namespace

TEST_CASE("Every Tensor method throws GraphError on an empty handle and on one whose Ir is gone") {
  check_all(tensor_calls(), Tensor{}, "Tensor", true);
  const Dangling d = make_dangling();
  check_all(tensor_calls(), d.handles.w, "Tensor", false);
  check_all(tensor_calls(), d.handles.y, "Tensor", false);
  // What names a tensor in messages never throws.
  CHECK(to_string(Tensor{}) == "an empty Tensor");
  CHECK(to_string(d.handles.w) == "a Tensor of a destroyed Ir");
}

TEST_CASE("Every Graph method throws GraphError on an empty handle and on one whose Ir is gone") {
  check_all(graph_calls(), Graph{}, "Graph", true);
  const Dangling d = make_dangling();
  check_all(graph_calls(), d.handles.main, "Graph", false);
  check_all(graph_calls(), d.handles.sub, "Graph", false);
}

TEST_CASE("Every Op method throws GraphError on an empty handle and on one whose Ir is gone") {
  check_all(op_calls(), Op{}, "Op", true);
  const Dangling d = make_dangling();
  check_all(op_calls(), d.handles.call, "Op", false);
}

TEST_CASE("Every stream handle method throws GraphError on an empty handle and on one whose Ir "
          "is gone") {
  const auto h2d = stream_calls<HostToDeviceStream>("HostToDeviceStream");
  const auto d2h = stream_calls<DeviceToHostStream>("DeviceToHostStream");
  check_all(h2d, HostToDeviceStream{}, "HostToDeviceStream", true);
  check_all(d2h, DeviceToHostStream{}, "DeviceToHostStream", true);
  const Dangling d = make_dangling();
  check_all(h2d, d.handles.in, "HostToDeviceStream", false);
  check_all(d2h, d.handles.out, "DeviceToHostStream", false);
  // The message says which call would have made the handle.
  check_unusable([] { (void)HostToDeviceStream{}.name(); }, "HostToDeviceStream::name()",
                 "HostToDeviceStream", true);
  CHECK_THROWS_WITH_AS((void)HostToDeviceStream{}.name(),
                       "HostToDeviceStream::name(): the HostToDeviceStream handle is empty "
                       "(default-constructed, or the h2d_stream call that would have made it "
                       "threw)",
                       GraphError);
}

TEST_CASE("Every RemoteBuffer method, and every call taking one, throws GraphError on an empty "
          "handle and on one whose Ir is gone") {
  check_all(remote_buffer_calls(), RemoteBuffer{}, "RemoteBuffer", true);
  const Dangling d = make_dangling();
  check_all(remote_buffer_calls(), d.handles.buffer, "RemoteBuffer", false);
  Ir live;
  auto main = live.main_graph().scope();
  check_all(remote_buffer_uses(), RemoteBuffer{}, "RemoteBuffer", true);
  check_all(remote_buffer_uses(), d.handles.buffer, "RemoteBuffer", false);
  CHECK_FALSE(remote_entry(d.handles.w).has_value()); // a query: no entry
}

TEST_CASE("Ops given a handle whose Ir is gone name the op and the handle") {
  const Dangling d = make_dangling();
  auto main = d.successor->ir.main_graph().scope();
  const Tensor x = constant(HostTensor({1.f, 2.f}), "x");
  check_unusable([&] { (void)ops::host_load(d.handles.in); }, "HostLoad", "HostToDeviceStream",
                 false);
  check_unusable([&] { ops::host_store(d.handles.out, x); }, "HostStore", "DeviceToHostStream",
                 false);
  check_unusable([&] { (void)ops::call(d.handles.sub, {x}); }, "Graph::name()", "Graph", false);
  check_unusable([&] { (void)ops::add(x, d.handles.w); }, "Tensor::dtype()", "Tensor", false);
  check_unusable([&] { (void)ops::relu(d.handles.w); }, "Tensor::dtype()", "Tensor", false);
  check_unusable([&] { (void)ops::print_tensor(d.handles.w); }, "PrintTensor: the tensor to print",
                 "Tensor", false);
  check_unusable([&] { (void)ops::ipu_copy(d.handles.w, 1); }, "IpuCopy", "Tensor", false);
  check_unusable([&] { (void)ops::collectives::replicated_all_reduce(d.handles.w); },
                 "ReplicatedAllReduce", "Tensor", false);
  check_unusable([&] { ops::remote_store(d.successor->buffer, 0, d.handles.w); }, "RemoteStore",
                 "Tensor", false);
  check_unusable([&] { (void)ops::remote_load(d.successor->buffer, d.handles.w); },
                 "RemoteLoad: the offset", "Tensor", false);
}

TEST_CASE("A stale handle is not taken for one of the Ir that reuses its storage's slot") {
  const Dangling d = make_dangling();
  const Program& now = *d.successor;
  // The successor made the same handles in the same order, in the slot the first Ir freed.
  CHECK(now.w.index() == d.handles.w.index());
  CHECK(now.w != d.handles.w);
  CHECK(now.in != d.handles.in);
  CHECK(now.main != d.handles.main);
  CHECK(now.w.valid());
  CHECK_FALSE(d.handles.w.valid());
  CHECK_FALSE(IrView(now.ir).owns(d.handles.w));
  CHECK_FALSE(now.main.contains(d.handles.w));
  CHECK(std::hash<Tensor>{}(now.w) != std::hash<Tensor>{}(d.handles.w));
}

TEST_CASE("A graph scope left open while its Ir is destroyed: building in it throws") {
  auto p = make_program();
  auto scope = p->main.scope();
  p.reset();
  CHECK_THROWS_WITH_AS(constant(1.0, float32),
                       doctest::Contains("constant: the current graph's Ir has been destroyed "
                                         "while its graph scope was still open"),
                       GraphError);
  CHECK_THROWS_WITH_AS(main_graph(), doctest::Contains("the current graph's Ir has been destroyed"),
                       GraphError);
}

TEST_CASE("Session calls given an empty stream or tensor handle, or one whose Ir is gone, throw "
          "GraphError naming the call") {
  auto p = make_program();
  Session session(p->ir);
  auto attached = session.attach();
  const Dangling d = make_dangling();
  const HostTensor x({1.f, 2.f});

  for (const bool empty : {true, false}) {
    CAPTURE(empty);
    const HostToDeviceStream in = empty ? HostToDeviceStream{} : d.handles.in;
    const DeviceToHostStream out = empty ? DeviceToHostStream{} : d.handles.out;
    const Tensor w = empty ? Tensor{} : d.handles.w;
    check_unusable(
        [&] {
          (void)session.run({{p->in, x}, {in, x}});
        },
        "Session::run", "HostToDeviceStream", empty);
    check_unusable(
        [&] {
          StreamOutputs outputs = session.create_host_outputs();
          outputs.emplace(out, HostTensor({2}, float32));
          session.run_with_outputs({{p->in, x}}, outputs);
        },
        "Session::run_with_outputs", "DeviceToHostStream", empty);
    check_unusable(
        [&] {
          (void)session.run_async({{in, x}});
        },
        "Session::run_async", "HostToDeviceStream", empty);
    check_unusable([&] { session.set_h2d_callback(in, [](HostTensor&) {}); },
                   "Session::set_h2d_callback", "HostToDeviceStream", empty);
    check_unusable([&] { session.set_h2d_source(in, std::vector<HostTensor>{x}); },
                   "HostToDeviceStream::name()", "HostToDeviceStream", empty);
    check_unusable([&] { session.set_d2h_callback(out, [](const HostTensor&) {}); },
                   "Session::set_d2h_callback", "DeviceToHostStream", empty);
    check_unusable([&] { (void)session.outfeed_queue(out); }, "Session::outfeed_queue",
                   "DeviceToHostStream", empty);
    check_unusable([&] { session.set_outfeed_mode(out, OutfeedMode::last); },
                   "Session::set_outfeed_mode", "DeviceToHostStream", empty);
    check_unusable([&] { (void)session.get_tensor_data(w); }, "Session::get_tensor_data", "Tensor",
                   empty);
    check_unusable(
        [&] {
          (void)session.get_tensors_data({p->w, w});
        },
        "Session::get_tensor_data", "Tensor", empty);
    check_unusable([&] { session.write_variable_data(w, x); }, "Session::write_variable_data",
                   "Tensor", empty);
    check_unusable(
        [&] {
          session.write_variables_data({{w, x}});
        },
        "Session::write_variable_data", "Tensor", empty);
  }
  // Nothing was bound or run by the failed calls: the session still runs as before.
  const auto out = session.run({{p->in, x}});
  CHECK(out.at(p->out) == HostTensor({4.f, 8.f}));
}
