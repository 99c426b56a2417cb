// Building blocks of the spiking attention nodes (SSA, SDSA, BSA), kept free of the node
// machinery so that tests can check them against the BSA paper's worked examples: Shiftmax and
// the ternary matrix product. Their projections are sim/synaptic/projection.hpp, their neurons
// the rules of sim/kernels/neuron_rules.hpp.
#pragma once
#include <cstdint>
#include <vector>

namespace ternion::spiking {

// Shiftmax of one row of integer scores (spec 1.4): every weight is 2^-n[j] with
// n[j] = gamma - x[j] >= 0, gamma = ceil(log2 sum_j 2^x[j]). Exact for any int32 row: the sum
// is kept as a count per exponent with binary carries (no floating point), so rows whose sum is
// a power of two plus a tiny remainder still round up. Returns gamma.
int shiftmax_exponents(const std::int32_t* x, std::int64_t n, std::int32_t* n_out);
// Convenience for tests: the weights 2^-n as doubles.
std::vector<double> shiftmax(const std::vector<std::int32_t>& x);

// Ternary matrix product of one head: S = Q K^T for Q [n, d], K [m, d] with entries in
// {-1, 0, 1} (row-major int8). Returns S [n, m]; `acs` receives the number of (non-zero,
// non-zero) operand pairs, i.e. the accumulates an event-driven array performs.
std::vector<std::int32_t> ternary_product(const std::vector<std::int8_t>& q,
                                          const std::vector<std::int8_t>& k, std::int64_t n,
                                          std::int64_t m, std::int64_t d, std::uint64_t* acs);

}  // namespace ternion::spiking
