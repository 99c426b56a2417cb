// Operation and memory-traffic counters that every node reports per sample and step.
// hw/ prices these; nothing here knows about energy. Fields are listed once in
// TERNION_OP_FIELDS so reports, traces and pricing iterate over the same set.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>

namespace ternion {

// name, meaning
#define TERNION_OP_FIELDS(X)                                                                   \
    X(ac)                /* accumulates: a {-1,0,+1} operand times a weight, or a plain add */ \
    X(mac)               /* multiply-accumulates on analog operands */                         \
    X(shift)             /* bit shifts (Shiftmax weights) */                                   \
    X(cmp)               /* comparisons (thresholds, max-pool) */                              \
    X(exp)               /* exponentials (softmax) */                                          \
    X(div)               /* divisions (normalisation) */                                       \
    X(neuron_update)     /* membrane state updates */                                          \
    X(spikes_out)        /* non-zero outputs of spiking nodes (+1 and -1 alike) */             \
    X(weight_read_bytes) /* bytes of weights read */                                           \
    X(state_read_bytes)  /* bytes of neuron/attention state read */                            \
    X(state_write_bytes) /* bytes of state written */                                          \
    X(spike_write_bytes) /* bytes of spike events written (routing) */

struct OpCounts {
#define TERNION_OP_DECL(name) std::uint64_t name = 0;
    TERNION_OP_FIELDS(TERNION_OP_DECL)
#undef TERNION_OP_DECL

    OpCounts& operator+=(const OpCounts& o) {
#define TERNION_OP_ADD(name) name += o.name;
        TERNION_OP_FIELDS(TERNION_OP_ADD)
#undef TERNION_OP_ADD
        return *this;
    }
    friend OpCounts operator+(OpCounts a, const OpCounts& b) {
        return a += b;
    }
    bool operator==(const OpCounts&) const = default;

    // Visit (name, value) pairs in the fixed field order.
    template <class F>
    void for_each(F&& f) const {
#define TERNION_OP_VISIT(name) f(std::string_view(#name), name);
        TERNION_OP_FIELDS(TERNION_OP_VISIT)
#undef TERNION_OP_VISIT
    }
    template <class F>
    void for_each_mut(F&& f) {
#define TERNION_OP_VISIT(name) f(std::string_view(#name), name);
        TERNION_OP_FIELDS(TERNION_OP_VISIT)
#undef TERNION_OP_VISIT
    }
};

#define TERNION_OP_COUNT1(name) +1
inline constexpr int kOpFieldCount = 0 TERNION_OP_FIELDS(TERNION_OP_COUNT1);
#undef TERNION_OP_COUNT1

}  // namespace ternion
