// Data-movement kernels: reshape, transpose, slice, concat, split, gather, onehot, pad, tile,
// triangles, init and arange. Most move elements without looking at them, so they work on raw
// words of the element size (words.hpp). The index-driven ones are in shape_indexed.cpp.
#include "common.hpp"
#include "words.hpp"

namespace pxl::emu::detail {

namespace {

/// The step of a one-input op that moves words as wide as its elements: on each worker's share
/// [begin, end) of the output, `body(x, y, begin, end)` with x and y the input and output as
/// unsigned words.
template <typename Body>
StepFn words_step(const KernelOp& op, const OpBuffers& buffers, Body body) {
  const std::int64_t n = op.output(0).nelms();
  return by_width(op.input(0).dtype(), [&](auto t) -> StepFn {
    using U = typename decltype(t)::type;
    const U* x = typed<const U>(buffers.inputs[0]);
    U* y = typed<U>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      body(x, y, begin, end);
    };
  });
}

/// out[i] = in[map(i)] for the worker's share of `n` output elements.
StepFn gather_map_step(const StridedMap<1>& map, DType d, const std::byte* in, std::byte* out,
                       std::int64_t n) {
  return by_width(d, [&](auto t) -> StepFn {
    using U = typename decltype(t)::type;
    const U* x = typed<U>(in);
    U* y = typed<U>(out);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      map.for_runs(begin, end,
                   [&](const auto& off, const auto& inner, std::int64_t pos, std::int64_t len) {
                     const U* src = x + off[0];
                     if (inner[0] == 1)
                       std::memcpy(y + pos, src, static_cast<std::size_t>(len) * sizeof(U));
                     else
                       for (std::int64_t j = 0; j < len; ++j)
                         y[pos + j] = src[j * inner[0]];
                   });
    };
  });
}

/// out[b][c][r] = in[b][r][c]: a batch of rows×cols matrices transposed in square tiles, so
/// that both the reads and the writes of a tile stay in cache (an element-by-element gather
/// reads a whole cache line per element). Workers split the output rows; each element is
/// written by exactly one worker.
StepFn transpose_last_two_step(DType d, const std::byte* in, std::byte* out, std::int64_t batches,
                               std::int64_t rows, std::int64_t cols) {
  return by_width(d, [&](auto t) -> StepFn {
    using U = typename decltype(t)::type;
    const U* x = typed<U>(in);
    U* y = typed<U>(out);
    return [=](unsigned w, unsigned nw) {
      constexpr std::int64_t tile = 32;
      const auto [begin, end] = worker_range(batches * cols, w, nw);
      for (std::int64_t o0 = begin; o0 < end;) {
        const std::int64_t b = o0 / cols;
        const std::int64_t o1 = std::min({end, o0 + tile, (b + 1) * cols});
        const U* xb = x + b * rows * cols;
        for (std::int64_t r0 = 0; r0 < rows; r0 += tile) {
          const std::int64_t r1 = std::min(rows, r0 + tile);
          for (std::int64_t o = o0; o < o1; ++o) {
            const std::int64_t c = o - b * cols;
            for (std::int64_t r = r0; r < r1; ++r)
              y[o * rows + r] = xb[r * cols + c];
          }
        }
        o0 = o1;
      }
    };
  });
}

/// Concat and split both copy, per outer row, contiguous segments of `seg` elements.
struct Segment {
  std::int64_t seg = 0;    ///< elements per outer row in this part
  std::int64_t offset = 0; ///< where the part starts within a row of the whole
};

/// Where a run of output elements is read from: `contiguous` elements from `src`, or zeros
/// when `src` is null.
struct Run {
  const std::byte* src = nullptr;
  std::int64_t contiguous = 0;
};

/// Writes elements [begin, end) of `y` a run at a time, `source(pos)` giving the Run that
/// starts at output element `pos` (contiguous in the output too). Concat, split and gather
/// move whole rows this way rather than element by element.
template <typename Source>
void copy_runs(std::byte* y, std::size_t elem, std::int64_t begin, std::int64_t end,
               Source source) {
  for (std::int64_t pos = begin; pos < end;) {
    const Run from = source(pos);
    const std::int64_t run = std::min(from.contiguous, end - pos);
    std::byte* dst = y + static_cast<std::size_t>(pos) * elem;
    const auto bytes = static_cast<std::size_t>(run) * elem;
    if (from.src)
      std::memcpy(dst, from.src, bytes);
    else
      std::memset(dst, 0, bytes);
    pos += run;
  }
}

} // namespace

StepFn compile_Reshape(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& spec = op.output(0).spec();
  return copy_step(buffers.outputs[0], buffers.inputs[0], spec.nelms(), size_of(spec.dtype));
}

StepFn compile_IpuCopy(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& spec = op.output(0).spec();
  return copy_step(buffers.outputs[0], buffers.inputs[0], spec.nelms(), size_of(spec.dtype));
}

StepFn compile_IoTileCopy(CompileContext& ctx, const KernelOp& op, const OpBuffers& buffers) {
  return compile_IpuCopy(ctx, op, buffers); // one IPU's tiles: a copy
}

StepFn compile_Transpose(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const Shape& in = op.input(0).shape();
  std::vector<std::int64_t> perm = op.attrs_as<TransposeAttrs>().perm;
  if (perm.empty())
    for (auto d = static_cast<std::int64_t>(in.size()); d-- > 0;)
      perm.push_back(d);
  const auto rank = static_cast<std::int64_t>(in.size());
  bool swaps_last_two = rank >= 2 && perm[static_cast<std::size_t>(rank - 2)] == rank - 1 &&
                        perm[static_cast<std::size_t>(rank - 1)] == rank - 2;
  for (std::int64_t k = 0; k + 2 < rank; ++k)
    swaps_last_two = swaps_last_two && perm[static_cast<std::size_t>(k)] == k;
  if (swaps_last_two) {
    const std::int64_t rows = in[static_cast<std::size_t>(rank - 2)];
    const std::int64_t cols = in[static_cast<std::size_t>(rank - 1)];
    const std::int64_t n = nelms(in);
    return transpose_last_two_step(op.input(0).dtype(), buffers.inputs[0], buffers.outputs[0],
                                   rows * cols == 0 ? 0 : n / (rows * cols), rows, cols);
  }
  const Shape in_strides = strides_of(in);
  Shape out, strides;
  for (auto p : perm) {
    out.push_back(in[static_cast<std::size_t>(p)]);
    strides.push_back(in_strides[static_cast<std::size_t>(p)]);
  }
  return gather_map_step(make_strided_map<1>(out, {strides}), op.input(0).dtype(),
                         buffers.inputs[0], buffers.outputs[0], nelms(out));
}

StepFn compile_Slice(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& attrs = op.attrs_as<SliceAttrs>();
  const Shape& in = op.input(0).shape();
  const Shape in_strides = strides_of(in);
  Shape out(in.size());
  std::int64_t base = 0;
  for (std::size_t d = 0; d < in.size(); ++d) {
    out[d] = std::max<std::int64_t>(0, attrs.stop[d] - attrs.start[d]);
    base += attrs.start[d] * in_strides[d];
  }
  if (nelms(out) == 0)
    base = 0;
  return gather_map_step(make_strided_map<1>(out, {in_strides}, {base}), op.input(0).dtype(),
                         buffers.inputs[0], buffers.outputs[0], nelms(out));
}

StepFn compile_Concat(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto axis = static_cast<std::size_t>(op.attrs_as<AxisAttrs>().axis);
  const Shape& out = op.output(0).shape();
  const std::int64_t inner = nelms(std::span(out).subspan(axis + 1));
  std::vector<Segment> parts;
  std::vector<const std::byte*> srcs;
  std::int64_t row = 0;
  for (std::size_t k = 0; k < op.num_inputs(); ++k) {
    const std::int64_t seg = op.input(k).shape()[axis] * inner;
    if (seg == 0)
      continue;
    parts.push_back({seg, row});
    srcs.push_back(buffers.inputs[k]);
    row += seg;
  }
  const std::int64_t n = op.output(0).nelms();
  const std::size_t elem = size_of(op.output(0).dtype());
  std::byte* y = buffers.outputs[0];
  return [=](unsigned w, unsigned nw) {
    const auto [begin, end] = worker_range(n, w, nw);
    copy_runs(y, elem, begin, end, [&](std::int64_t pos) {
      const std::int64_t r = pos / row, col = pos % row;
      std::size_t k = 0;
      while (col >= parts[k].offset + parts[k].seg)
        ++k;
      const std::int64_t within = col - parts[k].offset;
      return Run{srcs[k] + static_cast<std::size_t>(r * parts[k].seg + within) * elem,
                 parts[k].seg - within};
    });
  };
}

StepFn compile_Split(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto axis = static_cast<std::size_t>(op.attrs_as<SplitAttrs>().axis);
  const Shape& in = op.input(0).shape();
  const std::int64_t inner = nelms(std::span(in).subspan(axis + 1));
  const std::int64_t row = in[axis] * inner;
  std::vector<Segment> parts;
  std::vector<std::int64_t> sizes;
  std::int64_t offset = 0;
  for (std::size_t k = 0; k < op.num_outputs(); ++k) {
    const std::int64_t seg = op.output(k).shape()[axis] * inner;
    parts.push_back({seg, offset});
    sizes.push_back(op.output(k).nelms());
    offset += seg;
  }
  const std::size_t elem = size_of(op.input(0).dtype());
  const std::byte* x = buffers.inputs[0];
  std::vector<std::byte*> outs = buffers.outputs;
  return [=](unsigned w, unsigned nw) {
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const auto [begin, end] = worker_range(sizes[k], w, nw);
      const std::int64_t seg = parts[k].seg;
      copy_runs(outs[k], elem, begin, end, [&](std::int64_t pos) {
        const std::int64_t r = pos / seg, col = pos % seg;
        return Run{x + static_cast<std::size_t>(r * row + parts[k].offset + col) * elem, seg - col};
      });
    }
  };
}

namespace {
/// A gather along `axis` in each of `groups` groups (axis 0 of t and of the indices, when
/// there are more than one): by output element, copied in runs along the inner axes.
StepFn gather_step(const KernelOp& op, const OpBuffers& buffers, std::size_t axis,
                   std::int64_t groups) {
  const Shape& in = op.input(0).shape();
  const std::int64_t inner = nelms(std::span(in).subspan(axis + 1));
  const std::int64_t dim = in[axis];
  const std::int64_t num_indices = op.input(1).nelms() / groups;
  const std::int64_t outer_per_group = nelms(std::span(in).first(axis)) / groups;
  const std::int64_t n = op.output(0).nelms();
  const std::size_t elem = size_of(op.input(0).dtype());
  const std::byte* x = buffers.inputs[0];
  const std::int32_t* indices = typed<const std::int32_t>(buffers.inputs[1]);
  std::byte* y = buffers.outputs[0];
  return [=](unsigned w, unsigned nw) {
    const auto [begin, end] = worker_range(n, w, nw);
    copy_runs(y, elem, begin, end, [&](std::int64_t pos) {
      const std::int64_t r = pos / inner, i = pos % inner;
      const std::int64_t outer = r / num_indices, j = r % num_indices;
      const std::int64_t index = indices[outer / outer_per_group * num_indices + j];
      if (index < 0 || index >= dim)
        return Run{nullptr, inner - i}; // out of range: zeros
      return Run{x + static_cast<std::size_t>((outer * dim + index) * inner + i) * elem, inner - i};
    });
  };
}
} // namespace

StepFn compile_Gather(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return gather_step(op, buffers, static_cast<std::size_t>(op.attrs<OpKind::Gather>().axis), 1);
}

StepFn compile_TiedGather(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return gather_step(op, buffers, static_cast<std::size_t>(op.attrs<OpKind::TiedGather>().axis), 1);
}

StepFn compile_GroupedGather(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& a = op.attrs<OpKind::GroupedGather>();
  return gather_step(op, buffers, static_cast<std::size_t>(a.axis), a.group_size);
}

StepFn compile_OneHot(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& attrs = op.attrs_as<OneHotAttrs>();
  const Shape& idx_shape = op.input(0).shape();
  const auto axis = static_cast<std::size_t>(attrs.axis);
  const std::int64_t inner = nelms(std::span(idx_shape).subspan(axis));
  const std::int64_t classes = attrs.num_classes;
  const std::int64_t n = op.output(0).nelms();
  const std::int32_t* indices = typed<const std::int32_t>(buffers.inputs[0]);
  return by_width(op.output(0).dtype(), [&](auto t) -> StepFn {
    using U = typename decltype(t)::type;
    const U* values = typed<U>(buffers.inputs[1]);
    U* y = typed<U>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const U off = values[0], on = values[1];
      const auto [begin, end] = worker_range(n, w, nw);
      if (begin >= end)
        return;
      // Output position pos is (outer, c, i) in [.., classes, inner]: counted, not divided out.
      std::int64_t i = begin % inner, c = (begin / inner) % classes;
      const std::int32_t* index = indices + begin / (inner * classes) * inner;
      for (std::int64_t pos = begin; pos < end; ++pos) {
        y[pos] = index[i] == c ? on : off;
        if (++i == inner) {
          i = 0;
          if (++c == classes) {
            c = 0;
            index += inner;
          }
        }
      }
    };
  });
}

StepFn compile_Init(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  if (op.attrs_as<CreateAttrs>().init == InitType::undef)
    return [](unsigned, unsigned) {};
  const auto& spec = op.output(0).spec();
  return zero_step(buffers.outputs[0], spec.nelms(), size_of(spec.dtype));
}

StepFn compile_Arange(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& a = op.attrs<OpKind::Arange>();
  const std::int64_t n = op.output(0).nelms();
  const double start = a.a, step = a.b;
  return dispatch_numeric(op, op.output(0).dtype(), [&](auto t) -> StepFn {
    using T = typename decltype(t)::type;
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      for (std::int64_t i = begin; i < end; ++i)
        y[i] = convert_element<T>(start + static_cast<double>(i) * step);
    };
  });
}

namespace {
/// Keeps the elements of the last two axes with column - row <= k (lower) or >= k (upper).
StepFn triangle_step(const KernelOp& op, const OpBuffers& buffers, bool lower) {
  const Shape& shape = op.input(0).shape();
  const std::int64_t rows = shape[shape.size() - 2], cols = shape.back();
  const std::int64_t k = op.attrs_as<DiagonalAttrs>().k;
  return words_step(op, buffers, [=](const auto* x, auto* y, std::int64_t begin, std::int64_t end) {
    using U = std::remove_pointer_t<decltype(y)>;
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t col = i % cols, row = (i / cols) % rows;
      const bool keep = lower ? col - row <= k : col - row >= k;
      y[i] = keep ? x[i] : U{0};
    }
  });
}

} // namespace

StepFn compile_Tril(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return triangle_step(op, buffers, true);
}

StepFn compile_Triu(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  return triangle_step(op, buffers, false);
}

StepFn compile_Pad(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const auto& a = op.attrs<OpKind::Pad>();
  const IndexWalk walk = make_walk(op, op.output(0).shape(), op.input(0).shape());
  std::array<std::int64_t, max_map_rank> before{};
  std::copy(a.before.begin(), a.before.end(), before.begin());
  const std::int64_t n = op.output(0).nelms();
  const DType dtype = op.input(0).dtype();
  return by_width(dtype, [&](auto t) -> StepFn {
    using T = typename decltype(t)::type; // a word as wide as the element: pad moves bits
    const T value = element_bits<T>(dtype, a.value);
    const T* x = typed<const T>(buffers.inputs[0]);
    T* y = typed<T>(buffers.outputs[0]);
    return [=](unsigned w, unsigned nw) {
      const auto [begin, end] = worker_range(n, w, nw);
      for_each_source(
          walk, begin, end,
          [&](std::size_t d, std::int64_t c) {
            const std::int64_t s = c - before[d];
            return s >= 0 && s < walk.in[d] ? s : -1;
          },
          [&](std::int64_t i, std::int64_t from) { y[i] = from >= 0 ? x[from] : value; });
    };
  });
}

StepFn compile_Tile(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  const IndexWalk walk = make_walk(op, op.output(0).shape(), op.input(0).shape());
  return words_step(op, buffers, [=](const auto* x, auto* y, std::int64_t begin, std::int64_t end) {
    for_each_source(
        walk, begin, end, [&](std::size_t d, std::int64_t c) { return c % walk.in[d]; },
        [&](std::int64_t i, std::int64_t from) { y[i] = x[from]; });
  });
}

StepFn compile_Subsample(CompileContext&, const KernelOp& op, const OpBuffers& buffers) {
  // A strided view: output axis d steps through the input by strides[d] elements of the axis.
  const auto& strides = op.attrs<OpKind::Subsample>().strides;
  Shape steps = strides_of(op.input(0).shape());
  for (std::size_t d = 0; d < steps.size(); ++d)
    steps[d] *= strides[d];
  const Shape& out = op.output(0).shape();
  return gather_map_step(make_strided_map<1>(out, {steps}), op.input(0).dtype(), buffers.inputs[0],
                         buffers.outputs[0], nelms(out));
}

// PopXL's aliasing forms are held as copies (op_flags::View): their out-of-place kernels.
PXL_KERNEL_AS(ReshapeInplace, Reshape)
PXL_KERNEL_AS(TransposeInplace, Transpose)
PXL_KERNEL_AS(SliceInplace, Slice)
PXL_KERNEL_AS(ConcatInplace, Concat)

} // namespace pxl::emu::detail
