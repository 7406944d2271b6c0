#include "instance_exchange.hpp"

#include <algorithm>
#include <cstring>

namespace pxl::emu::detail {

namespace {
/// The largest input of a collective step that exchanges data (slices exchange nothing).
std::size_t largest_collective_input(const Program& program) {
  std::size_t largest = 0;
  for (const auto& g : program.graphs)
    if (g)
      for (const ProgramStep& s : g->steps)
        if (s.info.op && !s.inputs.empty() &&
            (s.info.kind == StepKind::fused_all_reduce ||
             family_of(s.info.op_kind) == OpFamily::collectives))
          largest = std::max(largest, s.inputs[0].bytes);
  return largest;
}
} // namespace

InstanceExchange::InstanceExchange(dist::detail::InstanceLink& link, const Program& program,
                                   std::int64_t local)
    : link_(link), local_(local),
      staging_(allocate_aligned(largest_collective_input(program) *
                                static_cast<std::size_t>(local * link.size()))) {}

void InstanceExchange::gather(std::span<const std::byte* const> local_inputs, std::size_t block,
                              const std::string& what) {
  std::byte* mine = input(offset(), block);
  for (std::size_t j = 0; j < local_inputs.size(); ++j)
    std::memcpy(mine + j * block, local_inputs[j], block);
  link_.all_gather(staging_.get(), block * static_cast<std::size_t>(local_), what);
}

} // namespace pxl::emu::detail
