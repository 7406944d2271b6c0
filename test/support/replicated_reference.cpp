#include "replicated_reference.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <thread>

namespace pxl::testing {

std::vector<HostTensor> Rendezvous::exchange(std::int64_t replica,
                                             const std::vector<std::int64_t>& members,
                                             const HostTensor& value) {
  std::unique_lock lock(mutex_);
  const auto key = std::pair(calls_[static_cast<std::size_t>(replica)]++, members.front());
  Meeting& m = meetings_[key];
  if (m.values.empty()) {
    m.values.resize(members.size());
    m.given.assign(members.size(), false);
  }
  const auto me = static_cast<std::size_t>(std::find(members.begin(), members.end(), replica) -
                                           members.begin());
  m.values[me] = value;
  m.given[me] = true;
  changed_.notify_all();
  changed_.wait(lock, [&] { return std::ranges::all_of(m.given, [](bool g) { return g; }); });
  std::vector<HostTensor> r = m.values;
  if (++m.taken == members.size())
    meetings_.erase(key);
  return r;
}

namespace {
/// Replica r's part of an array shaped [transfers, replicas, *shape] (dims of 1 dropped), as
/// the single-replica evaluator takes it ([transfers, *shape]).
HostTensor replica_part(const HostTensor& a, const TensorSpec& spec, std::int64_t transfers,
                        std::int64_t replicas, std::int64_t r) {
  Shape shape = spec.shape;
  if (transfers != 1)
    shape.insert(shape.begin(), transfers);
  HostTensor part(shape, spec.dtype);
  const std::size_t bytes = spec.nbytes();
  for (std::int64_t k = 0; k < transfers; ++k)
    std::memcpy(part.bytes().data() + static_cast<std::size_t>(k) * bytes,
                a.bytes().data() + static_cast<std::size_t>(k * replicas + r) * bytes, bytes);
  return part;
}
} // namespace

std::map<std::string, HostTensor>
run_replicated(const Ir& ir, const std::map<std::string, HostTensor>& h2d,
               std::vector<std::unique_ptr<ReferenceEvaluator>>* evaluators) {
  const std::int64_t replicas = ir.replication_factor(), transfers = ir.num_host_transfers();
  auto rendezvous = std::make_shared<Rendezvous>(replicas);
  std::vector<std::unique_ptr<ReferenceEvaluator>> evs;
  std::vector<std::map<std::string, HostTensor>> outs(static_cast<std::size_t>(replicas));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(replicas));
  std::vector<std::thread> threads;
  for (std::int64_t r = 0; r < replicas; ++r) {
    evs.push_back(std::make_unique<ReferenceEvaluator>(ir));
    evs.back()->join(rendezvous, r);
  }
  for (std::int64_t r = 0; r < replicas; ++r)
    threads.emplace_back([&, r] {
      try {
        std::map<std::string, HostTensor> in;
        for (const auto& s : ir.h2d_streams())
          if (auto it = h2d.find(s.name()); it != h2d.end())
            in.emplace(s.name(), replica_part(it->second, s.spec(), transfers, replicas, r));
        outs[static_cast<std::size_t>(r)] = evs[static_cast<std::size_t>(r)]->run(in);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads)
    t.join();
  for (auto& e : errors)
    if (e)
      std::rethrow_exception(e);
  // Interleave the replicas' arrays back into [transfers, replicas, *shape].
  std::map<std::string, HostTensor> result;
  for (const auto& s : ir.d2h_streams()) {
    if (!outs[0].contains(s.name()))
      continue;
    Shape shape = s.spec().shape;
    if (replicas != 1)
      shape.insert(shape.begin(), replicas);
    if (transfers != 1)
      shape.insert(shape.begin(), transfers);
    HostTensor a(shape, s.dtype());
    const std::size_t bytes = s.spec().nbytes();
    for (std::int64_t r = 0; r < replicas; ++r)
      for (std::int64_t k = 0; k < transfers; ++k)
        std::memcpy(a.bytes().data() + static_cast<std::size_t>(k * replicas + r) * bytes,
                    outs[static_cast<std::size_t>(r)].at(s.name()).bytes().data() +
                        static_cast<std::size_t>(k) * bytes,
                    bytes);
    result.emplace(s.name(), std::move(a));
  }
  if (evaluators)
    *evaluators = std::move(evs);
  return result;
}

} // namespace pxl::testing
