// Lesson 3: modules. A Module's build traces into a graph whose parameters are named inputs;
// factories create the variables; binding them gives a callable graph. One graph can be bound
// to several variable sets, and sub-modules can be inlined or outlined.
#include <pxl/addons.hpp>
#include <pxl/pxl.hpp>

#include <iostream>

namespace addons = pxl::addons;

// The tutorial's layer (pxl::addons::Linear is the same thing).
struct Linear : addons::Module<Linear> {
  explicit Linear(std::int64_t out_features) : out(out_features) {}
  std::int64_t out;
  pxl::Tensor build(pxl::Tensor x) {
    auto w = add_variable_input("weight", addons::init::normal(0, 0.02, {x.shape().back(), out}),
                                x.dtype());
    auto b = add_variable_input("bias", addons::init::zeros({out}), x.dtype());
    return pxl::ops::matmul(x, w) + b;
  }
};

// Sub-modules are named after their members: variables fc1.weight, fc1.bias, ...
struct Net : addons::Module<Net> {
  PXL_SUBMODULE(Linear, fc1, 32);
  PXL_SUBMODULE(Linear, fc2, 32);
  PXL_SUBMODULE(Linear, fc3, 32);
  PXL_SUBMODULE(Linear, fc4, 10);
  pxl::Tensor build(pxl::Tensor x) {
    x = x.reshape({x.shape()[0], -1});
    x = pxl::ops::gelu(fc1(x)); // calling a sub-module inlines its ops
    x = pxl::ops::gelu(fc2(x));
    x = pxl::ops::gelu(fc3(x));
    return fc4(x);
  }
};

// fc2 and fc3 outlined: one Linear graph, called twice with two variable sets.
struct NetOutlined : addons::Module<NetOutlined> {
  PXL_SUBMODULE(Linear, fc1, 32);
  PXL_SUBMODULE(Linear, fc4, 10);
  pxl::Tensor build(pxl::Tensor x) {
    x = x.reshape({x.shape()[0], -1});
    x = pxl::ops::gelu(fc1(x));
    auto [facts, linear] = Linear(32).create_graph(x);
    auto fc2 = add_variable_inputs("fc2", facts);
    x = pxl::ops::gelu(linear.bind(fc2).call({x})[0]);
    auto fc3 = add_variable_inputs("fc3", facts);
    x = pxl::ops::gelu(linear.bind(fc3).call({x})[0]);
    return fc4(x);
  }
};

int main() {
  pxl::Ir ir;
  pxl::HostToDeviceStream x_stream;
  pxl::DeviceToHostStream y_streams[2];
  addons::NamedTensors sets[2];
  pxl::Graph linear_graph;
  {
    auto in_main = ir.main_graph().scope();
    auto [net_facts, net] = Net{}.create_graph(pxl::TensorSpec{{1, 4, 4}, pxl::float32});
    std::cout << "Net variables:";
    for (const auto& key : net_facts.keys_flat())
      std::cout << " " << key;
    std::cout << "\nfc1.weight: " << net_facts.at("fc1.weight") << "\n\n";

    // One Linear graph, two variable sets, two bound graphs.
    x_stream = pxl::h2d_stream({1, 4}, pxl::float32, "x");
    auto x = pxl::ops::host_load(x_stream, "x");
    auto [facts, linear] = Linear(2).create_graph(x);
    std::cout << linear.print_schedule() << "\n";
    linear_graph = linear.graph();
    for (int i = 0; i < 2; ++i) {
      sets[i] = facts.init(i == 0 ? "first" : "second");
      auto y = linear.bind(sets[i]).call({x})[0];
      y_streams[i] = pxl::d2h_stream({1, 2}, pxl::float32, "y" + std::to_string(i));
      pxl::ops::host_store(y_streams[i], y);
    }

    auto [outlined_facts, outlined] =
        NetOutlined{}.create_graph(pxl::TensorSpec{{1, 4, 4}, pxl::float32});
    std::cout << outlined.print_schedule() << "\n";
  }

  pxl::Session session{ir, "ipu_model"};
  auto attached = session.attach();
  const auto out = session.run({{x_stream, pxl::HostTensor({1.f, 2.f, 3.f, 4.f}, {1, 4})}});
  std::cout << "bound to first:  y = " << out.at(y_streams[0]) << "\n";
  std::cout << "bound to second: y = " << out.at(y_streams[1]) << "\n";
  // Code is compiled per step: the main graph's ops plus the Linear graph's, once, whose
  // matmul and bias add the compiler fuses into one step.
  std::cout << "code: " << session.memory_report().ipus[0].steps << " compiled steps for the "
            << ir.main_graph().ops().size() << " ops of the main graph and the "
            << linear_graph.ops().size() << " of " << linear_graph.name()
            << " (its matmul and bias add fused into one step; one copy for both call sites)\n\n";

  // DotTree walkthrough: nested, ordered, addressed by dotted names.
  addons::DotTree<int> tree;
  tree.insert("fc1.weight", 1);
  tree.insert("fc2.weight", 2);
  tree.insert("fc1.bias", 3);
  std::cout << tree;
  std::cout << "keys: ";
  for (const auto& k : tree.keys())
    std::cout << k << " ";
  std::cout << "\nflat keys: ";
  for (const auto& k : tree.keys_flat())
    std::cout << k << " ";
  std::cout << "\nfc1 sub-tree:\n" << tree.sub("fc1");
  const auto [keys, values] = tree.unpack();
  std::cout << "unpacked (sorted): ";
  for (std::size_t i = 0; i < keys.size(); ++i)
    std::cout << keys[i] << "=" << values[i] << " ";
  std::cout << "\ndoubled:\n" << tree.map([](int v) { return 2 * v; });
  const auto weights = session.get_tensors_data(sets[1].tensors());
  std::cout << "second.weight = " << weights.at(sets[1].at("weight")) << "\n";
  // Pair the two sets' variables by name (how weights are copied between IRs).
  for (const auto& [from, to] : sets[0].to_mapping(sets[1]))
    std::cout << from.id() << " -> " << to.id() << "\n";
}
