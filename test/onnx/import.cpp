// pxl::onnx: models PyTorch exported (test/onnx/models, made by make_models.py) run on the
// emulator as PyTorch ran them, and every malformed or unsupported model is refused clearly.
#include "pxl/onnx/import.hpp"

#include "pxl/addons/data/fashion_mnist.hpp"
#include "pxl/addons/layers/conv.hpp"
#include "pxl/addons/layers/dense.hpp"
#include "pxl/addons/layers/pool.hpp"
#include "pxl/addons/safetensors.hpp"
#include "pxl/addons/training/trainer.hpp"
#include "pxl/ops/elementwise.hpp"
#include "pxl/ops/host_io.hpp"
#include "pxl/ops/shape.hpp"
#include "pxl/session.hpp"

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <string>

namespace test_onnx_import {

const std::filesystem::path models = std::filesystem::path(PXL_SOURCE_DIR) / "test/onnx/models";

// Imports `name`.onnx, runs it once on its saved input and returns the output. The input's
// shape fixes a symbolic batch.
pxl::HostTensor run(const std::string& name, pxl::onnx::ImportOptions options) {
  pxl::Ir ir;
  auto x = pxl::HostTensor::load_npy(models / (name + ".input.npy"));
  options.input_shapes = {{"input", x.shape()}};
  const auto imported = pxl::onnx::import_model(ir, models / (name + ".onnx"), options);
  if (x.dtype() == pxl::float32)
    x = x.astype(options.float_dtype);
  pxl::HostToDeviceStream in;
  pxl::DeviceToHostStream out;
  {
    auto scope = ir.main_graph().scope();
    const auto vars = imported.variables.init();
    in = pxl::h2d_stream(x.shape(), x.dtype(), "input");
    const auto y = imported.graph.bind(vars).call({pxl::ops::host_load(in, "input")})[0];
    out = pxl::d2h_stream(y.shape(), y.dtype(), "output");
    pxl::ops::host_store(out, y);
  }
  pxl::Session session{ir, "ipu_model"};
  auto attached = session.attach();
  return session.run({{in, x}}).at(out);
}

// max |y - expected| / max |expected|, the issue's measure of agreement with PyTorch.
double relative_error(const pxl::HostTensor& y, const pxl::HostTensor& expected) {
  REQUIRE(y.shape() == expected.shape());
  const pxl::HostTensor y32 = y.astype(pxl::float32);
  const auto a = y32.data<float>();
  const auto b = expected.data<float>();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

TEST_CASE("models PyTorch 1.13 exported match PyTorch's outputs to 1e-4") {
  // keras_cnn: tf2onnx's node sequence for Keras layers on NHWC images, against NumPy.
  for (const std::string name :
       {"mlp", "cnn", "cnn_opset11", "encoder", "encoder_opset14", "fashion_cnn", "keras_cnn"}) {
    CAPTURE(name);
    const auto expected = pxl::HostTensor::load_npy(models / (name + ".output.npy"));
    const auto got = run(name, {});
    const double error = relative_error(got, expected);
    MESSAGE(name << ": max |Δ| / max |y| = " << error);
    CHECK(error < 1e-4);
  }
}

TEST_CASE("each supported operator, in a model of its own, matches NumPy") {
  // models/ops: one small model per operator the exported models do not reach, with NumPy's
  // output (make_models.py). Every supported operator is in one of the test models.
  std::set<std::string> reached;
  auto note_ops = [&](const std::filesystem::path& path) {
    ::onnx::ModelProto m;
    std::ifstream f(path, std::ios::binary);
    REQUIRE(m.ParseFromIstream(&f));
    for (const auto& n : m.graph().node())
      reached.insert(n.op_type());
  };
  for (const auto& entry : std::filesystem::directory_iterator(models)) // PyTorch's models
    if (entry.path().extension() == ".onnx")
      note_ops(entry.path());
  std::vector<std::filesystem::path> op_models;
  for (const auto& entry : std::filesystem::directory_iterator(models / "ops"))
    if (entry.path().extension() == ".onnx")
      op_models.push_back(entry.path());
  std::sort(op_models.begin(), op_models.end());
  REQUIRE(op_models.size() >= 30);
  for (const auto& path : op_models) {
    const std::string name = "ops/" + path.stem().string();
    CAPTURE(name);
    note_ops(path);
    const auto expected = pxl::HostTensor::load_npy(models / (name + ".output.npy"));
    const double error = relative_error(run(name, {}), expected);
    CHECK(error < 1e-5);
  }
  for (const auto& op : pxl::onnx::supported_operators()) {
    CAPTURE(op.op_type);
    CHECK(reached.contains(op.op_type));
  }
}

TEST_CASE("float_dtype float16 runs a model in half precision") {
  const auto expected = pxl::HostTensor::load_npy(models / "cnn.output.npy");
  const auto y = run("cnn", {.float_dtype = pxl::float16});
  CHECK(y.dtype() == pxl::float16);
  const double error = relative_error(y, expected);
  MESSAGE("cnn in float16: max |Δ| / max |y| = " << error);
  CHECK(error < 1e-2);
  CHECK_THROWS_WITH_AS(pxl::onnx::Model::load(models / "cnn.onnx", {.float_dtype = pxl::int32}),
                       doctest::Contains("float_dtype must be float32 or float16, got int32"),
                       pxl::DTypeError);
}

TEST_CASE("an import lists the model's inputs, outputs and initializers as variables") {
  pxl::Ir ir;
  const auto imported = pxl::onnx::import_model(ir, models / "cnn.onnx");
  CHECK(imported.model->opset() == 13);
  REQUIRE(imported.model->inputs().size() == 1);
  CHECK(imported.model->inputs()[0].name == "input");
  CHECK(imported.model->inputs()[0].shape == pxl::Shape{2, 1, 12, 12});
  CHECK(imported.inputs.at("input").shape() == pxl::Shape{2, 1, 12, 12});
  CHECK(imported.outputs.at("output").shape() == pxl::Shape{2, 10});
  const auto keys = imported.variables.keys_flat();
  for (const char* v :
       {"conv1.weight", "conv1.bias", "bn1.weight", "bn1.running_mean", "fc.weight", "fc.bias"})
    CHECK(std::find(keys.begin(), keys.end(), v) != keys.end());

  SUBCASE("constants leave initializers out of the variables") {
    pxl::Ir ir2;
    const auto frozen =
        pxl::onnx::import_model(ir2, models / "cnn.onnx", {.constants = {"fc.weight"}});
    const auto k = frozen.variables.keys_flat();
    CHECK(std::find(k.begin(), k.end(), "fc.weight") == k.end());
    CHECK(std::find(k.begin(), k.end(), "fc.bias") != k.end());
    pxl::Ir ir3;
    CHECK(pxl::onnx::import_model(ir3, models / "cnn.onnx", {.all_constants = true})
              .variables.keys_flat()
              .empty());
  }
}

// A one-node model: `op` from a float input of `shape` to a float output of `out` (the
// input's shape when empty; -1 a symbolic dimension), built with ONNX's protobuf API.
::onnx::ModelProto one_node(const std::string& op, std::vector<std::int64_t> shape,
                            std::int64_t opset = 13, std::vector<std::int64_t> out = {}) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* node = g->add_node();
  node->set_op_type(op);
  node->set_name("the_node");
  node->add_input("x");
  node->add_output("y");
  for (const char* name : {"x", "y"}) {
    auto* v = name[0] == 'x' ? g->add_input() : g->add_output();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    auto* s = tt->mutable_shape();
    for (auto d : name[0] == 'y' && !out.empty() ? out : shape) {
      auto* dim = s->add_dim();
      if (d < 0)
        dim->set_dim_param("N");
      else
        dim->set_dim_value(d);
    }
  }
  return m;
}

std::string bytes_of(const ::onnx::ModelProto& m) { return m.SerializeAsString(); }

pxl::onnx::ImportedModel import_bytes(pxl::Ir& ir, const std::string& bytes,
                                      const pxl::onnx::ImportOptions& options = {}) {
  return pxl::onnx::import_model(ir, std::as_bytes(std::span(bytes.data(), bytes.size())), options);
}

TEST_CASE("malformed, truncated and unsupported models are refused with what is wrong") {
  pxl::Ir ir;
  CHECK_THROWS_WITH_AS(pxl::onnx::import_model(ir, models / "missing.onnx"),
                       doctest::Contains("missing.onnx' cannot be opened"), pxl::onnx::ImportError);
  std::ifstream f(models / "cnn.onnx", std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK_THROWS_WITH_AS(import_bytes(ir, whole.substr(0, whole.size() / 2)),
                       doctest::Contains("not a valid ONNX ModelProto"), pxl::onnx::ImportError);
  CHECK_THROWS_WITH_AS(import_bytes(ir, "not a model at all"),
                       doctest::Contains("not a valid ONNX ModelProto"), pxl::onnx::ImportError);

  CHECK_THROWS_WITH_AS(
      import_bytes(ir, bytes_of(one_node("Hardmax", {2, 2}))),
      doctest::Contains("node 'the_node' (Hardmax, opset 13): operator Hardmax is not "
                        "supported"),
      pxl::onnx::ImportError);
  CHECK_THROWS_WITH_AS(import_bytes(ir, bytes_of(one_node("Relu", {2, 2}, 10))),
                       doctest::Contains("imports opset 10 of the default domain; pxl imports "
                                         "opsets 11 to 17"),
                       pxl::onnx::ImportError);
  CHECK_THROWS_WITH_AS(import_bytes(ir, bytes_of(one_node("NoSuchOp", {2}))),
                       doctest::Contains("rejected by the ONNX checker"), pxl::onnx::ImportError);

  SUBCASE("a symbolic dimension needs a shape from the caller, which must agree") {
    const std::string relu = bytes_of(one_node("Relu", {-1, 3}));
    CHECK_THROWS_WITH_AS(import_bytes(ir, relu),
                         doctest::Contains("input 'x' leaves dimension 0 symbolic: give its "
                                           "shape in ImportOptions::input_shapes"),
                         pxl::onnx::ImportError);
    CHECK_THROWS_WITH_AS(import_bytes(ir, relu, {.input_shapes = {{"x", {4, 5}}}}),
                         doctest::Contains("input 'x' has dimension 1 of 3, "
                                           "ImportOptions::input_shapes gives (4, 5)"),
                         pxl::onnx::ImportError);
    CHECK_THROWS_WITH_AS(import_bytes(ir, relu, {.input_shapes = {{"z", {4, 3}}}}),
                         doctest::Contains("input_shapes names 'z', which is not an input"),
                         pxl::onnx::ImportError);
    const auto ok = import_bytes(ir, relu, {.input_shapes = {{"x", {4, 3}}}});
    CHECK(ok.inputs.at("x").shape() == pxl::Shape{4, 3});
  }

  SUBCASE("an attribute outside what pxl imports names the node") {
    auto m = one_node("MaxPool", {1, 1, 4, 4}, 13, {1, 1, 3, 3});
    auto* node = m.mutable_graph()->mutable_node(0);
    auto* k = node->add_attribute();
    k->set_name("kernel_shape");
    k->set_type(::onnx::AttributeProto::INTS);
    k->add_ints(2);
    k->add_ints(2);
    auto* so = node->add_attribute();
    so->set_name("storage_order");
    so->set_type(::onnx::AttributeProto::INT);
    so->set_i(1);
    CHECK_THROWS_WITH_AS(import_bytes(ir, bytes_of(m)),
                         doctest::Contains("node 'the_node' (MaxPool, opset 13): attribute "
                                           "storage_order = 1 is not supported"),
                         pxl::onnx::ImportError);
  }

  SUBCASE("a shape the graph computes cannot reshape") {
    // y = Reshape(x, Shape(x) computed on the device by a Relu of a cast): refused by name.
    auto m = one_node("Reshape", {2, 3}, 13, {-1, -1});
    auto* g = m.mutable_graph();
    auto* shape = g->add_node();
    shape->set_op_type("Relu");
    shape->add_input("x");
    shape->add_output("x2");
    auto* flat = g->add_node();
    flat->set_op_type("Cast");
    flat->add_input("x2");
    flat->add_output("s");
    auto* to = flat->add_attribute();
    to->set_name("to");
    to->set_type(::onnx::AttributeProto::INT);
    to->set_i(::onnx::TensorProto::INT64);
    // The Reshape reads s; put it last, in order.
    auto reshape = g->node(0);
    g->mutable_node()->DeleteSubrange(0, 1);
    *g->add_node() = reshape;
    g->mutable_node(2)->add_input("s");
    CHECK_THROWS_WITH_AS(import_bytes(ir, bytes_of(m)),
                         doctest::Contains("must be known at import"), pxl::onnx::ImportError);
  }

  SUBCASE("a value folded at import is bounded: no model asks the host for gigabytes") {
    auto m = one_node("Relu", {2}, 13, {-1, -1});
    auto* g = m.mutable_graph();
    auto* big = g->add_initializer();
    big->set_name("big");
    big->set_data_type(::onnx::TensorProto::INT64);
    big->add_dims(2);
    big->add_int64_data(std::int64_t{1} << 30);
    big->add_int64_data(std::int64_t{1} << 30);
    g->mutable_node(0)->set_output(0, "r");
    auto* fill = g->add_node();
    fill->set_op_type("ConstantOfShape");
    fill->set_name("fill");
    fill->add_input("big");
    fill->add_output("c");
    auto* add = g->add_node();
    add->set_op_type("Add");
    add->add_input("r");
    add->add_input("c");
    add->add_output("y");
    CHECK_THROWS_WITH_AS(import_bytes(ir, bytes_of(m)),
                         doctest::Contains("node 'fill' (ConstantOfShape, opset 13): the value "
                                           "known at import would hold more than 2^24 elements"),
                         pxl::onnx::ImportError);
  }

  SUBCASE("building outside a module trace needs every initializer a constant") {
    const auto model = pxl::onnx::Model::load(models / "mlp.onnx");
    pxl::Ir ir2;
    auto scope = ir2.main_graph().scope();
    const auto x = pxl::constant(pxl::HostTensor::full({3, 20}, pxl::float32, 0.5));
    CHECK_THROWS_WITH_AS(model.build({x}), doctest::Contains("needs a Module trace"),
                         pxl::onnx::ImportError);
    CHECK_THROWS_WITH_AS(
        model.build({pxl::constant(pxl::HostTensor::full({3, 21}, pxl::float32, 0.5))}),
        doctest::Contains("input 'input' expected shape (3, 20), found (3, 21)"), pxl::ShapeError);
    const auto constants = pxl::onnx::Model::load(models / "mlp.onnx", {.all_constants = true});
    CHECK(constants.build({x})[0].shape() == pxl::Shape{3, 5});
  }
}

TEST_CASE("initializers are variables under NamedTensors keys made of their names") {
  CHECK(pxl::onnx::variable_name("conv1.weight") == "conv1.weight");
  CHECK(pxl::onnx::variable_name("conv2d/kernel") == "conv2d.kernel");
  CHECK(pxl::onnx::variable_name("/encoder/layers.0/Add") == "encoder.layers.0.Add");
  CHECK(pxl::onnx::variable_name("onnx::MatMul_7") == "onnx__MatMul_7");
  CHECK(pxl::onnx::variable_name("//") == "_");
  pxl::Ir ir;
  const auto keras = pxl::onnx::import_model(ir, models / "keras_cnn.onnx",
                                             {.input_shapes = {{"input", {2, 28, 28, 1}}}});
  const auto keys = keras.variables.keys_flat();
  CHECK(std::find(keys.begin(), keys.end(), "conv2d.kernel") != keys.end());
  CHECK(std::find(keys.begin(), keys.end(), "bn.moving_mean") != keys.end());
}

TEST_CASE("docs/onnx.md's table lists exactly the supported operators, opsets and restrictions") {
  std::ifstream doc(std::filesystem::path(PXL_SOURCE_DIR) / "docs/onnx.md");
  REQUIRE(doc);
  const std::regex row(R"(^\| `(\w+)` \| (\d+)–(\d+) \| (.*) \|$)");
  std::vector<pxl::onnx::SupportedOperator> listed;
  bool in_table = false;
  for (std::string line; std::getline(doc, line);) {
    in_table = in_table || line == "## Supported operators";
    std::smatch m;
    if (in_table && std::regex_match(line, m, row))
      listed.push_back({m[1], std::stoll(m[2]), std::stoll(m[3]), m[4] == "—" ? "" : m[4].str()});
  }
  const auto supported = pxl::onnx::supported_operators();
  REQUIRE(listed.size() == supported.size());
  for (std::size_t i = 0; i < listed.size(); ++i) {
    CAPTURE(supported[i].op_type);
    CHECK(listed[i].op_type == supported[i].op_type);
    CHECK(listed[i].min_opset == supported[i].min_opset);
    CHECK(listed[i].max_opset == supported[i].max_opset);
    CHECK(listed[i].restriction == supported[i].restriction);
  }
}

pxl::HostTensor transposed(const pxl::HostTensor& w) {
  const auto rows = w.shape()[0], cols = w.shape()[1];
  pxl::HostTensor t({cols, rows}, w.dtype());
  const auto in = w.data<float>();
  const auto out = t.data<float>();
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      out[static_cast<std::size_t>(c * rows + r)] = in[static_cast<std::size_t>(r * cols + c)];
  return t;
}

// fashion_cnn written with pxl's layers: the same operations, Dense's weights (in, out) where
// PyTorch's Linear keeps (out, in).
struct FashionCnn : pxl::addons::Module<FashionCnn> {
  static pxl::addons::Conv2D conv(std::string name, std::int64_t filters) {
    return pxl::addons::named_module<pxl::addons::Conv2D>(
        std::move(name), filters, std::vector<std::int64_t>{3},
        pxl::addons::ConvLayerOptions{.padding = pxl::addons::Padding::same,
                                      .data_format = pxl::addons::DataFormat::channels_first});
  }
  pxl::addons::Conv2D conv1 = conv("conv1", 8), conv2 = conv("conv2", 16);
  PXL_SUBMODULE(pxl::addons::MaxPool2D, pool, std::vector<std::int64_t>{2});
  PXL_SUBMODULE(pxl::addons::Dense, fc1, 32, pxl::addons::Activation::relu);
  PXL_SUBMODULE(pxl::addons::Dense, fc2, 10);
  pxl::Tensor build(const pxl::Tensor& x) {
    pxl::Tensor h = pool(pxl::ops::relu(conv2(pool(pxl::ops::relu(conv1(x))))));
    return fc2(fc1(h.reshape({h.shape()[0], 16 * 7 * 7})));
  }
};

TEST_CASE("an imported CNN fine-tunes on Fashion-MNIST as the same network written in pxl") {
  namespace data = pxl::addons::data;
  auto images = [](const data::Dataset& d) {
    pxl::HostTensor x = d.images.astype(pxl::float32).reshaped({d.size(), 1, 28, 28});
    for (float& v : x.data<float>())
      v = (v / 255.0f - data::fashion_mnist_mean) / data::fashion_mnist_std;
    return x;
  };
  const auto train =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::train, 2000);
  const auto test =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::test, 500);
  const auto x = images(train), xt = images(test);
  const auto y = train.labels.astype(pxl::int32), yt = test.labels.astype(pxl::int32);

  // The model's initial weights, by the pxl network's names.
  const auto model =
      std::make_shared<const pxl::onnx::Model>(pxl::onnx::Model::load(models / "fashion_cnn.onnx"));
  CHECK(model->inputs()[0].shape == pxl::Shape{-1, 1, 28, 28});
  pxl::addons::Trainer imported(pxl::onnx::OnnxModule{model});
  pxl::addons::Trainer written(FashionCnn{});
  const pxl::addons::CompileOptions compile{.optimizer =
                                                pxl::addons::optimizers::SGDOptions{.lr = 0.1},
                                            .from_logits = true,
                                            .metrics = {"accuracy"}};
  imported.compile(compile);
  written.compile(compile);
  const pxl::addons::FitOptions fit{.epochs = 1, .batch_size = 16, .shuffle = false};
  const data::LabelledBatchSpec batch{.features = {{16, 1, 28, 28}, pxl::float32},
                                      .labels = {{16}, pxl::int32}};
  imported.build(batch);
  written.build(batch);
  std::map<std::string, pxl::HostTensor> initial;
  for (const auto& [name, w] : imported.weights())
    initial.emplace(name, name.starts_with("fc") && name.ends_with("weight") ? transposed(w) : w);
  const auto path = std::filesystem::temp_directory_path() / "pxl_onnx_fashion_cnn.safetensors";
  pxl::addons::save_safetensors(path, initial);
  written.load_weights(path);
  std::filesystem::remove(path);

  const auto before = imported.evaluate(xt, yt, 100);
  const auto h_imported = imported.fit(x, y, fit);
  const auto h_written = written.fit(x, y, fit);
  const auto after = imported.evaluate(xt, yt, 100);
  const auto after_written = written.evaluate(xt, yt, 100);
  MESSAGE("imported: loss " << before.at("loss") << " -> " << after.at("loss") << ", accuracy "
                            << before.at("accuracy") << " -> " << after.at("accuracy")
                            << ", written in pxl: " << after_written.at("accuracy"));
  CHECK(after.at("loss") < 0.7 * before.at("loss"));
  CHECK(after.at("accuracy") > 0.6);
  CHECK(std::abs(after.at("accuracy") - after_written.at("accuracy")) <= 0.005);
  // The same arithmetic: the weights agree to float rounding.
  const auto trained = written.weights();
  for (const auto& entry : imported.weights()) { // not a binding: CAPTURE's lambda reads it
    const std::string& name = entry.first;
    CAPTURE(name);
    const auto ours = name.starts_with("fc") && name.ends_with("weight")
                          ? transposed(trained.at(name))
                          : trained.at(name);
    CHECK(pxl::allclose(entry.second, ours, 1e-4, 1e-6));
  }
}

TEST_CASE("an imported model trains on 2 replicas as on one, and in float16") {
  namespace data = pxl::addons::data;
  const auto train =
      data::load_fashion_mnist(data::fashion_mnist_default_dir, data::Split::train, 256);
  pxl::HostTensor x = train.images.astype(pxl::float32).reshaped({256, 1, 28, 28});
  for (float& v : x.data<float>())
    v = v / 255.0f - 0.5f;
  const auto y = train.labels.astype(pxl::int32);
  const auto model =
      std::make_shared<const pxl::onnx::Model>(pxl::onnx::Model::load(models / "fashion_cnn.onnx"));
  auto trained = [&](std::int64_t replicas, pxl::DType dtype) {
    pxl::addons::Trainer t(pxl::onnx::OnnxModule{model});
    t.compile({.optimizer = pxl::addons::optimizers::SGDOptions{.lr = 0.05},
               .from_logits = true,
               .replicas = replicas,
               .dtype = dtype});
    const auto h = t.fit(x, y, {.epochs = 1, .batch_size = 32, .shuffle = false});
    return std::pair{t.weights(), h};
  };
  const auto [one, h1] = trained(1, pxl::float32);
  const auto [two, h2] = trained(2, pxl::float32);
  for (const auto& entry : one) { // not a structured binding: CAPTURE's lambda reads it
    CAPTURE(entry.first);
    CHECK(pxl::allclose(entry.second, two.at(entry.first), 1e-4, 1e-6));
  }
  // Mixed precision: the variables follow the float16 input, and they train.
  const auto [half, h16] = trained(1, pxl::float16);
  REQUIRE(half.at("fc2.weight").dtype() == pxl::float16);
  CHECK(std::isfinite(h16.history.at("loss").at(0)));
  CHECK(
      pxl::allclose(half.at("fc2.weight").astype(pxl::float32), one.at("fc2.weight"), 0.05, 5e-3));
}

} // namespace test_onnx_import
