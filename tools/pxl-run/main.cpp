// pxl-run: imports an ONNX model, runs it once on the emulator and writes its outputs as .npy.
//
//   pxl-run MODEL.onnx --input NAME=FILE.npy ... [--output NAME=FILE.npy ...] [options]
//
// Every input of the model needs an --input; the file's shape fixes the model's symbolic
// dimensions. Each output's name, shape and dtype is printed. A bad flag, file, shape, dtype or
// name, or a model pxl cannot import, is a message on stderr and exit code 1.
#include "pxl/onnx/import.hpp"

#include "pxl/emu/estimate.hpp"
#include "pxl/emu/target.hpp"
#include "pxl/ops/host_io.hpp"
#include "pxl/session.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string model;
  std::vector<std::string> inputs, outputs;
  unsigned workers = 0;
  std::int64_t replicas = 1;
  std::string dtype = "float32";
  bool profile = false;
  std::string trace, memory_report;
  std::string report;
  bool estimate_only = false;
  std::optional<std::string> target;
};

class UsageError : public pxl::ValueError {
public:
  using ValueError::ValueError;
};

// "NAME=FILE" → {NAME, FILE}.
std::pair<std::string, std::string> name_and_file(const std::string& flag, const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw UsageError(flag + " expects NAME=FILE.npy, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

std::string shape_text(const pxl::Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

// [R·b, ...] as the replicas' [R, b, ...] and back.
pxl::Shape split_batch(const std::string& name, const pxl::Shape& s, std::int64_t replicas) {
  if (replicas == 1)
    return s;
  if (s.empty() || s[0] % replicas != 0)
    throw UsageError("input '" + name + "' of shape " + shape_text(s) +
                     " does not split over --replicas " + std::to_string(replicas) +
                     " along its first axis");
  pxl::Shape per = s;
  per[0] /= replicas;
  return per;
}

// The replicas' [R, b, ...] outputs as one [R·b, ...] (a scalar output per replica: [R]).
pxl::Shape joined_batch(const pxl::Shape& s) {
  pxl::Shape whole;
  for (std::size_t i = 1; i < s.size(); ++i)
    whole.push_back(s[i]);
  if (whole.empty())
    return {s[0]};
  whole[0] *= s[0];
  return whole;
}

// The replicas' [R·b, ...] input: b's shape with R in front of its batch ([R, b, ...]).
pxl::Shape replicated(const pxl::Shape& per_replica, std::int64_t replicas) {
  pxl::Shape s = per_replica;
  if (replicas > 1) {
    if (s.empty())
      s = {replicas};
    else
      s[0] *= replicas;
  }
  return s;
}

// --estimate-only: the program compiled for the target without a Session (no device memory,
// no run): its memory per IPU and tile and the estimated time of the run.
int estimate(const Options& o, const pxl::Ir& ir, const pxl::emu::Target& target) {
  const pxl::emu::IrEstimate e = pxl::emu::estimate(ir, target);
  std::cout << "Estimate on target '" << e.target << "' (" << e.replicas
            << " replica(s)), without running:\n"
            << e.memory.summary();
  if (!e.memory.fits())
    std::cout << "The model does not fit target '" << e.target << "'.\n";
  std::printf("estimated device time of one run: %.2f us (the host round trip included)\n",
              e.seconds() * 1e6);
  if (!o.memory_report.empty()) {
    std::ofstream out(o.memory_report);
    if (!(out << e.memory.to_json()))
      throw pxl::IoError("--memory-report: cannot open '" + o.memory_report + "' for writing");
  }
  return 0;
}

int run(const Options& o) {
  if (o.dtype != "float32" && o.dtype != "float16")
    throw UsageError("--dtype must be float32 or float16, got '" + o.dtype + "'");
  if (o.replicas < 1)
    throw UsageError("--replicas must be at least 1, got " + std::to_string(o.replicas));
  const pxl::DType float_dtype = o.dtype == "float16" ? pxl::float16 : pxl::float32;
  if (o.target && !o.estimate_only)
    throw UsageError("--target: only --estimate-only estimates for a target (a run is on the "
                     "emulator); add --estimate-only");
  if (o.estimate_only)
    for (const auto& [flag, given] :
         {std::pair{"--output", !o.outputs.empty()}, std::pair{"--profile", o.profile},
          std::pair{"--trace", !o.trace.empty()}, std::pair{"--report", !o.report.empty()}})
      if (given)
        throw UsageError(std::string("--estimate-only runs nothing, so ") + flag +
                         " has nothing to work on; drop one of them");
  const pxl::emu::Target target = pxl::emu::target_named(o.target.value_or("ipu2"));

  // The model first (its errors before the files'), then its inputs from their files, whose
  // shapes fix its symbolic dimensions.
  const auto probe = pxl::onnx::Model::load(o.model, {.float_dtype = float_dtype});
  auto has_input = [&](const std::string& name) {
    const auto& ins = probe.inputs();
    return std::any_of(ins.begin(), ins.end(), [&](const auto& v) { return v.name == name; });
  };
  std::map<std::string, pxl::HostTensor> given;
  for (const auto& s : o.inputs) {
    auto [name, file] = name_and_file("--input", s);
    if (!has_input(name))
      throw UsageError("--input " + name + ": the model has no input of that name");
    if (given.contains(name))
      throw UsageError("--input " + name + " is given twice");
    given.emplace(name, pxl::HostTensor::load_npy(file));
  }
  pxl::onnx::ImportOptions options{.float_dtype = float_dtype};
  for (const auto& spec : probe.inputs()) {
    const auto it = given.find(spec.name);
    if (it == given.end() && o.estimate_only) { // the model's own shape, if it fixes one
      if (std::any_of(spec.shape.begin(), spec.shape.end(), [](auto d) { return d < 0; }))
        throw UsageError("the model's input '" + spec.name +
                         "' has a symbolic dimension: give --input " + spec.name +
                         "=FILE.npy, whose shape fixes it");
      given.emplace(spec.name, pxl::HostTensor(replicated(spec.shape, o.replicas), spec.dtype));
      options.input_shapes.emplace(spec.name, spec.shape);
      continue;
    }
    if (it == given.end())
      throw UsageError("the model's input '" + spec.name + "' has no --input " + spec.name +
                       "=FILE.npy");
    pxl::HostTensor& data = it->second;
    if (data.dtype() == pxl::float32 && spec.dtype == pxl::float16) // --dtype float16
      data = data.astype(pxl::float16);
    // 64-bit files as PopXL's downcast_inputs: the Session narrows them, range-checked.
    if (data.dtype() != spec.dtype && pxl::downcast_dtype(data.dtype()) != spec.dtype)
      throw pxl::DTypeError("--input " + spec.name + ": the model takes " +
                            std::string(pxl::name(spec.dtype)) + ", the file holds " +
                            std::string(pxl::name(data.dtype())));
    options.input_shapes.emplace(spec.name, split_batch(spec.name, data.shape(), o.replicas));
  }
  std::map<std::string, std::string> wanted;
  for (const auto& s : o.outputs) {
    const auto named = name_and_file("--output", s); // clang 14: no binding in a lambda
    const std::string& name = named.first;
    const std::string& file = named.second;
    const auto& outs = probe.outputs();
    if (std::none_of(outs.begin(), outs.end(), [&](const auto& v) { return v.name == name; }))
      throw UsageError("--output " + name + ": the model has no output of that name");
    wanted.emplace(name, file);
  }

  pxl::Ir ir(o.replicas);
  const auto imported = pxl::onnx::import_model(ir, o.model, options);
  pxl::StreamInputs feeds;
  std::map<std::string, pxl::DeviceToHostStream> results;
  {
    auto in_main = ir.main_graph().scope();
    const auto vars = imported.variables.init();
    std::vector<pxl::Tensor> xs;
    for (const auto& spec : imported.model->inputs()) {
      const pxl::Tensor& in = imported.inputs.at(spec.name);
      pxl::HostTensor data = given.at(spec.name);
      if (o.replicas > 1) {
        pxl::Shape replicated = in.shape();
        replicated.insert(replicated.begin(), o.replicas);
        data = data.reshaped(replicated);
      }
      const auto stream = pxl::h2d_stream(in.shape(), in.dtype(), spec.name);
      feeds.emplace(stream, std::move(data));
      xs.push_back(pxl::ops::host_load(stream, spec.name));
    }
    const auto ys = imported.graph.bind(vars).call(xs);
    for (std::size_t i = 0; i < ys.size(); ++i) {
      const auto& name = imported.model->outputs()[i].name;
      const auto stream = pxl::d2h_stream(ys[i].shape(), ys[i].dtype(), name);
      pxl::ops::host_store(stream, ys[i]);
      results.emplace(name, stream);
    }
  }
  if (o.estimate_only)
    return estimate(o, ir, target);
  // --report: Poplar's autoReport into DIR (memory, trace, profile and the HTML page).
  std::map<std::string, std::string> engine_options;
  if (!o.report.empty())
    engine_options = {{"autoReport.all", "true"}, {"autoReport.directory", o.report}};
  pxl::Session session(
      ir, "ipu_model",
      {.workers = o.workers, .profile = o.profile, .engine_options = engine_options});
  auto attached = session.attach();
  const auto outputs = session.run(feeds);
  for (const auto& spec : imported.model->outputs()) {
    pxl::HostTensor y = outputs.at(results.at(spec.name));
    if (o.replicas > 1) { // [R, b, ...] → [R·b, ...]
      y = y.reshaped(joined_batch(y.shape()));
    }
    std::cout << spec.name << ": shape " << shape_text(y.shape()) << ", dtype "
              << pxl::name(y.dtype()) << "\n";
    if (const auto it = wanted.find(spec.name); it != wanted.end())
      y.save_npy(it->second);
  }
  if (o.profile) {
    std::cout << session.profile().summary() << "\n";
    std::cout << session.memory_report().summary() << "\n";
  }
  if (!o.trace.empty())
    session.write_trace(o.trace);
  if (!o.memory_report.empty())
    session.write_memory_report(o.memory_report);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Import an ONNX model, run it once on pxl's IPU emulator and write its outputs "
               "as .npy files"};
  app.add_option("model", o.model, "The .onnx file")->required();
  app.add_option("--input", o.inputs,
                 "NAME=FILE.npy: the model's input NAME (every input needs one; the file's "
                 "shape fixes the model's symbolic dimensions)");
  app.add_option("--output", o.outputs,
                 "NAME=FILE.npy: write the model's output NAME (every output is printed)");
  app.add_option("--workers", o.workers, "Worker threads of the emulator (0: one per core)")
      ->capture_default_str();
  app.add_option("--replicas", o.replicas,
                 "Data-parallel replicas: each input's first axis is split among them and the "
                 "outputs joined")
      ->capture_default_str();
  app.add_option("--dtype", o.dtype,
                 "float32, or float16: the model's floating-point values in half precision "
                 "(float32 input files are cast)")
      ->capture_default_str();
  app.add_flag("--profile", o.profile,
               "Estimate the IPU's time (the cost model) and print the execution summary and "
               "the memory per IPU");
  app.add_option("--trace", o.trace, "Write a Chrome/Perfetto trace of the run to FILE");
  app.add_option("--memory-report", o.memory_report, "Write the memory report to FILE (JSON)");
  app.add_option("--report", o.report,
                 "Write PopVision-style reports of the run into DIR: memory, trace, profile and "
                 "an HTML page (docs/report.md)");
  app.add_flag("--estimate-only", o.estimate_only,
               "Compile the model for --target without running it: print its memory per IPU "
               "and tile and the estimated time of a run (the cost model), and exit. Inputs "
               "the model fixes need no --input");
  app.add_option("--target", o.target,
                 "With --estimate-only, the preset IPU system to estimate for: " +
                     pxl::emu::target_preset_names() + " (default ipu2, the GC200)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 1;
  }
  try {
    return run(o);
  } catch (const pxl::Error& e) {
    std::fprintf(stderr, "pxl-run: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pxl-run: unexpected error: %s\n", e.what());
    return 2;
  }
}
