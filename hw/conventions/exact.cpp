// exact: ternion's own event counts, as the engine booked them (docs/cost-model.md).
#include "hw/conventions/convention.hpp"

namespace ternion::hw {

namespace {

class Exact final : public Convention {
  public:
    std::string_view name() const override { return "exact"; }
    bool recounts() const override { return false; }
    void count(const LayerRecord&, LayerCost& c, PriceContext&, CostReport&) const override {
        c.basis = "exact";
    }
};

}  // namespace

const Convention& exact_convention() {
    static const Exact c;
    return c;
}

}  // namespace ternion::hw
