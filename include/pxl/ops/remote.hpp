// Streaming Memory ops (PopXL's remote_load, remote_load_, remote_store): copies between a
// tensor and an entry of a remote buffer; and remote_code_load, a graph's code loaded from it.
#pragma once

#include "pxl/ir/attrs.hpp"
#include "pxl/ir/graph.hpp"
#include "pxl/ir/remote_buffer.hpp"
#include "pxl/ir/tensor.hpp"

#include <cstdint>

namespace pxl::ops {

/// Entry `offset` of `buffer`, as a new tensor of the buffer's entry spec. ValueError for an
/// offset out of range, GraphError for a buffer of another Ir.
Tensor remote_load(const RemoteBuffer& buffer, std::int64_t offset, std::string name = "");
/// The entry an int32 scalar tensor names when the op runs: an offset out of range copies
/// nothing and stops the run after this op, on every replica (no later step runs), with a
/// ValueError naming the op, its step, the offset and the buffer's size (docs/semantics.md,
/// "Failed runs"). DTypeError / ShapeError for an offset that is not an int32 scalar.
Tensor remote_load(const RemoteBuffer& buffer, const Tensor& offset, std::string name = "");
/// As remote_load, into `t` (in place; returns it updated). ShapeError / DTypeError when `t`
/// does not match the buffer's entries.
Tensor remote_load_(const RemoteBuffer& buffer, std::int64_t offset, const Tensor& t);
Tensor remote_load_(const RemoteBuffer& buffer, const Tensor& offset, const Tensor& t);
/// Writes `t` to entry `offset` of `buffer`; errors as remote_load_.
///
/// Loads and stores of one buffer run in the order they were created (each op runs where it
/// is created in its graph's schedule), so a load made after a store reads what it stored:
/// PopXL's rule to order them with in_sequence is kept by construction.
void remote_store(const RemoteBuffer& buffer, std::int64_t offset, const Tensor& t);
void remote_store(const RemoteBuffer& buffer, const Tensor& offset, const Tensor& t);

/// PopXL's remote_code_load: the code of `graph` is loaded from Streaming Memory to
/// `destination` at this point of the current graph, for programs that keep a graph's code
/// off the chip until it runs. Results never depend on it. Only CodeLocation::executable is
/// supported, as in PopXL (ValueError for the others); ValueError when `graph` is the current
/// graph, GraphError for a graph of another Ir. The cost model does not yet price the code's
/// bytes (every graph's code counts as always live, see docs/profiling.md).
void remote_code_load(const Graph& graph, CodeLocation destination = CodeLocation::executable);

} // namespace pxl::ops
