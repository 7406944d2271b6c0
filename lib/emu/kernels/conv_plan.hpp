// The planning of oneDNN convolutions for kernels/conv.cpp (its only includer, so that the file
// stays readable without costing another unit): a convolution's geometry in oneDNN's terms, a
// planned primitive with each worker's memory in oneDNN's preferred layouts, and a step's
// state.
#pragma once

#include "../kernel.hpp"
#include "common.hpp"
#include "dnnl_util.hpp"

#include <dnnl.hpp>

#include <array>
#include <optional>
#include <vector>

namespace pxl::emu::detail {

/// A convolution in oneDNN's terms: src (N, IC, in...), weights (OC, IC / groups, kernel...),
/// dst (N, OC, out...).
struct ConvGeometry {
  std::int64_t n = 0, ic = 0, oc = 0, groups = 1;
  dnnl::memory::dims in, out, kernel, strides, dilates, pad_l, pad_r;

  std::int64_t src_image() const { return ic * product(in); }
  std::int64_t dst_image() const { return oc * product(out); }
  std::int64_t weights_size() const { return oc * (ic / groups) * product(kernel); }

  /// The descriptors of a convolution over `images` images, `g` groups of `ic_g` input and
  /// `oc_g` output channels each (a part of this one: a block of its groups or channels).
  dnnl::memory::desc src(std::int64_t images, std::int64_t channels) const {
    dnnl::memory::dims d{images, channels};
    d.insert(d.end(), in.begin(), in.end());
    return dense(d);
  }
  dnnl::memory::desc dst(std::int64_t images, std::int64_t channels) const {
    dnnl::memory::dims d{images, channels};
    d.insert(d.end(), out.begin(), out.end());
    return dense(d);
  }
  dnnl::memory::desc weights(std::int64_t g, std::int64_t oc_g, std::int64_t ic_g) const {
    dnnl::memory::dims d{oc_g, ic_g};
    if (g > 1)
      d.insert(d.begin(), g);
    d.insert(d.end(), kernel.begin(), kernel.end());
    return dense(d);
  }
};

/// `src`, `weights` and `dst` name the shapes of the convolution's three tensors, whichever of
/// them the op reads and writes.
inline ConvGeometry conv_geometry_of(const ConvAttrs& a, const Shape& src, const Shape& weights,
                                     const Shape& dst) {
  ConvGeometry g;
  g.n = src[0];
  g.ic = src[1];
  g.oc = dst[1];
  g.groups = a.groups;
  g.in.assign(src.begin() + 2, src.end());
  g.out.assign(dst.begin() + 2, dst.end());
  g.kernel.assign(weights.begin() + 2, weights.end());
  g.strides = a.strides;
  g.pad_l = a.pads_begin;
  g.pad_r = a.pads_end;
  for (const auto d : a.dilations)
    g.dilates.push_back(d - 1); // oneDNN counts the gaps between kernel taps
  return g;
}

enum class ConvPass : std::uint8_t { forward, backward_data, backward_weights };

/// The three tensors of a convolution, in oneDNN's terms, and their index in a PlannedConv's
/// arrays.
enum class ConvRole : std::uint8_t { src, weights, dst };
constexpr std::size_t role_at(ConvRole r) { return static_cast<std::size_t>(r); }

/// One planned primitive and, per worker, the memory it runs on. The kernel hands it dense
/// (N, C, spatial...) float32 buffers (`bind`); where oneDNN chose a blocked layout for a
/// tensor (nChw16c and the like, several times faster than the plain one for most channel
/// counts), the worker holds that tensor in its layout too, and `load` and `store` reorder
/// between the two.
struct PlannedConv {
  dnnl::primitive primitive;
  std::array<std::optional<dnnl::reorder>, 3> reorders; ///< by ConvRole, where the layouts differ
  struct Bound {
    std::array<dnnl::memory, 3> plain;  ///< by ConvRole, on the kernel's buffers
    std::array<dnnl::memory, 3> chosen; ///< by ConvRole, in oneDNN's layout (or `plain`)
    dnnl::memory scratchpad;
    std::array<dnnl_exec_arg_t, 4> args{};
    std::array<std::array<dnnl_exec_arg_t, 2>, 3> reorder_args{};
  };
  std::vector<Bound> workers;

  void bind(unsigned w, ConvRole r, const float* data) {
    workers[w].plain[role_at(r)].set_data_handle(const_cast<float*>(data));
  }
  /// Brings the bound buffer of `r`, a tensor the primitive reads, into oneDNN's layout.
  void load(unsigned w, dnnl::stream& stream, ConvRole r) { reorder(w, stream, r); }
  /// Writes `r`, a tensor the primitive wrote, to its bound buffer.
  void store(unsigned w, dnnl::stream& stream, ConvRole r) { reorder(w, stream, r); }
  void execute(unsigned w, dnnl::stream& stream) {
    const auto& args = workers[w].args;
    const auto status = dnnl_primitive_execute(primitive.get(), stream.get(),
                                               static_cast<int>(args.size()), args.data());
    PXL_ASSERT(status == dnnl_success);
  }

private:
  void reorder(unsigned w, dnnl::stream& stream, ConvRole r) {
    if (!reorders[role_at(r)])
      return;
    const auto& args = workers[w].reorder_args[role_at(r)];
    const auto status = dnnl_primitive_execute(reorders[role_at(r)]->get(), stream.get(),
                                               static_cast<int>(args.size()), args.data());
    PXL_ASSERT(status == dnnl_success);
  }
};

/// Plans `pass` over `images` images and `g` groups of `oc_g` output and `ic_g` input channels
/// for `workers` workers, in the layouts oneDNN prefers.
inline PlannedConv plan_conv(const ConvGeometry& c, ConvPass pass, std::int64_t images,
                             std::int64_t g, std::int64_t oc_g, std::int64_t ic_g,
                             unsigned workers) {
  using namespace dnnl;
  const std::array<memory::desc, 3> plain = {c.src(images, g * ic_g), c.weights(g, oc_g, ic_g),
                                             c.dst(images, g * oc_g)};
  std::array<memory::desc, 3> any;
  for (std::size_t r = 0; r < 3; ++r)
    any[r] = memory::desc(plain[r].dims(), memory::data_type::f32, memory::format_tag::any);
  const auto alg = algorithm::convolution_direct;
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  const convolution_forward::desc fwd(prop_kind::forward_training, alg, any[role_at(ConvRole::src)],
                                      any[role_at(ConvRole::weights)], any[role_at(ConvRole::dst)],
                                      c.strides, c.dilates, c.pad_l, c.pad_r);
  const convolution_forward::primitive_desc fwd_pd(fwd, attr, cpu_engine());
  PlannedConv p;
  std::array<memory::desc, 3> chosen;
  memory::desc scratch;
  std::array<int, 3> arg = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  std::array<bool, 3> reads = {true, true, false};
  switch (pass) {
  case ConvPass::forward:
    p.primitive = convolution_forward(fwd_pd);
    chosen = {fwd_pd.src_desc(), fwd_pd.weights_desc(), fwd_pd.dst_desc()};
    scratch = fwd_pd.scratchpad_desc();
    break;
  case ConvPass::backward_data: {
    const convolution_backward_data::desc d(
        alg, any[role_at(ConvRole::src)], any[role_at(ConvRole::weights)],
        any[role_at(ConvRole::dst)], c.strides, c.dilates, c.pad_l, c.pad_r);
    const convolution_backward_data::primitive_desc pd(d, attr, cpu_engine(), fwd_pd);
    p.primitive = convolution_backward_data(pd);
    chosen = {pd.diff_src_desc(), pd.weights_desc(), pd.diff_dst_desc()};
    scratch = pd.scratchpad_desc();
    arg = {DNNL_ARG_DIFF_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_DST};
    reads = {false, true, true};
    break;
  }
  case ConvPass::backward_weights: {
    const convolution_backward_weights::desc d(
        alg, any[role_at(ConvRole::src)], any[role_at(ConvRole::weights)],
        any[role_at(ConvRole::dst)], c.strides, c.dilates, c.pad_l, c.pad_r);
    const convolution_backward_weights::primitive_desc pd(d, attr, cpu_engine(), fwd_pd);
    p.primitive = convolution_backward_weights(pd);
    chosen = {pd.src_desc(), pd.diff_weights_desc(), pd.diff_dst_desc()};
    scratch = pd.scratchpad_desc();
    arg = {DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_DST};
    reads = {true, false, true};
    break;
  }
  }
  for (std::size_t r = 0; r < 3; ++r)
    if (chosen[r] != plain[r])
      p.reorders[r] =
          reads[r]
              ? reorder(reorder::primitive_desc(cpu_engine(), plain[r], cpu_engine(), chosen[r]))
              : reorder(reorder::primitive_desc(cpu_engine(), chosen[r], cpu_engine(), plain[r]));
  for (unsigned w = 0; w < workers; ++w) {
    PlannedConv::Bound b;
    for (std::size_t r = 0; r < 3; ++r) {
      b.plain[r] = memory(plain[r], cpu_engine(), DNNL_MEMORY_NONE);
      // oneDNN allocates the blocked copies (aligned), here, once.
      b.chosen[r] = p.reorders[r] ? memory(chosen[r], cpu_engine()) : b.plain[r];
      const auto from = reads[r] ? b.plain[r] : b.chosen[r];
      const auto to = reads[r] ? b.chosen[r] : b.plain[r];
      b.reorder_args[r] = {dnnl_exec_arg_t{DNNL_ARG_FROM, from.get()},
                           dnnl_exec_arg_t{DNNL_ARG_TO, to.get()}};
      b.args[r] = dnnl_exec_arg_t{arg[r], b.chosen[r].get()};
    }
    b.scratchpad = memory(scratch, cpu_engine());
    b.args[3] = dnnl_exec_arg_t{DNNL_ARG_SCRATCHPAD, b.scratchpad.get()};
    p.workers.push_back(std::move(b));
  }
  return p;
}

/// What a step owns: its plans, per-worker streams and float32 staging.
struct ConvState {
  ConvGeometry c;
  std::vector<PlannedConv> plans;
  std::vector<dnnl::stream> streams;
  /// Per worker, float32 copies: the src part, the weights part, the dst part a call reads or
  /// writes (sized for the dtype and pass; empty where the call uses the buffers directly).
  std::vector<std::vector<float>> src32, weights32, dst32;
  /// Per worker, a fused float16 weight gradient's block rounded to half, as stored unfused.
  std::vector<std::vector<half>> weights16;

  void make_streams(unsigned workers) {
    for (unsigned w = 0; w < workers; ++w)
      streams.emplace_back(cpu_engine());
  }
};

} // namespace pxl::emu::detail
