// The counting conventions `--count` offers: their list, and what they share.
#include "hw/conventions/convention.hpp"

#include <cstdio>

#include "sim/core/error.hpp"

// Every convention, in the order `--count` lists them; each is defined in <name>.cpp.
#define TERNION_CONVENTIONS(X) X(exact) X(neurobench) X(paper) X(syops) X(lemaire)

namespace ternion::hw {

#define TERNION_DECLARE(name) const Convention& name##_convention();
TERNION_CONVENTIONS(TERNION_DECLARE)
#undef TERNION_DECLARE

const std::vector<const Convention*>& conventions() {
#define TERNION_LIST(name) &name##_convention(),
    static const std::vector<const Convention*> all = {TERNION_CONVENTIONS(TERNION_LIST)};
#undef TERNION_LIST
    return all;
}

const Convention& convention(const CountMode& m) {
    std::string known;
    for (const Convention* c : conventions()) {
        if (c->name() == m.name) return *c;
        known += (known.empty() ? "" : ", ") + std::string(c->name());
    }
    throw OptionError("count", "unknown counting mode '" + m.name + "' (use " + known + ")");
}

std::string fmt(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// A layer with weights that NeuroBench would hook: NIR's connection primitives say so by their
// traits; nodes outside the NIR set by reporting a non-zero dense_synops_per_step (pooling and
// normalisation report 0).
bool is_connection(const LayerRecord& l) {
    if (l.category != NodeCategory::synaptic && l.category != NodeCategory::readout &&
        l.category != NodeCategory::other)
        return false;
    return l.traits.connection || l.dense_synops_per_step > 0;
}

}  // namespace ternion::hw
