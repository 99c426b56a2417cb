// Per-element spike counts of a run for the mesh routing (spike_counts.hpp): each worker's
// scratch belongs to one node and counts into its own integers; the tally keeps every scratch's
// counts alive and sums them once the run is over.
#include "hw/chip/spike_counts.hpp"

namespace ternion::chip {

struct ElementSpikeTally::Counts {
    bool bound = false;
    int out = -1, in = -1;
    std::vector<std::uint64_t> out_counts, in_counts;
};

namespace {

struct CountScratch final : StepTally::Scratch {
    std::shared_ptr<void> counts;
};

// Adds one to every non-zero element of `a`: its index list where it has one, else its values.
void count_nonzero(const Activity& a, std::vector<std::uint64_t>& c) {
    const auto n = static_cast<std::uint64_t>(c.size());
    if (a.listed) {
        for (auto i : a.active)
            if (i < n) ++c[i];
        return;
    }
    for (std::size_t i = 0; i < a.values.size() && i < c.size(); ++i) c[i] += a.values[i] != 0.0f;
}

}  // namespace

ElementSpikeTally::ElementSpikeTally(const Graph& g, const std::vector<std::string>& nodes) {
    for (const std::string& name : nodes) {
        const int u = g.find(name);
        if (u < 0) continue;
        const Node& n = g.node(u);
        if (n.category() == NodeCategory::input) {
            // The first node fed by this Input alone sees its activity as its summed input.
            for (int v : g.order()) {
                const auto& ins = g.in_edges(v);
                if (ins.size() != 1) continue;
                const Edge& e = g.edges()[static_cast<std::size_t>(ins.front())];
                if (e.src != u || e.delayed || g.node(v).in_size() != n.out_size()) continue;
                roles_[&g.node(v)].in = static_cast<int>(names_.size());
                break;
            }
        } else {
            roles_[&n].out = static_cast<int>(names_.size());
        }
        names_.push_back(name);
        sizes_.push_back(n.out_size());
    }
}

std::unique_ptr<StepTally::Scratch> ElementSpikeTally::make_scratch() const {
    auto c = std::make_shared<Counts>();
    {
        std::lock_guard<std::mutex> lk(mu_);
        all_.push_back(c);
    }
    auto s = std::make_unique<CountScratch>();
    s->counts = c;
    return s;
}

void ElementSpikeTally::tally(const Node& node, const Activity& in, const Activity& out,
                              const NodeState*, std::int64_t, Scratch* scratch, double*) const {
    auto* c = static_cast<Counts*>(static_cast<CountScratch*>(scratch)->counts.get());
    if (!c->bound) {  // a scratch serves one node: its role is looked up once
        c->bound = true;
        if (const auto it = roles_.find(&node); it != roles_.end()) {
            c->out = it->second.out, c->in = it->second.in;
            if (c->out >= 0) c->out_counts.assign(static_cast<std::size_t>(sizes_[c->out]), 0);
            if (c->in >= 0) c->in_counts.assign(static_cast<std::size_t>(sizes_[c->in]), 0);
        }
    }
    if (c->out >= 0) count_nonzero(out, c->out_counts);
    if (c->in >= 0) count_nonzero(in, c->in_counts);
}

std::map<std::string, std::vector<std::uint64_t>> ElementSpikeTally::totals() const {
    std::map<std::string, std::vector<std::uint64_t>> t;
    std::lock_guard<std::mutex> lk(mu_);
    const auto add = [&](int k, const std::vector<std::uint64_t>& v) {
        auto& d = t[names_[static_cast<std::size_t>(k)]];
        if (d.empty()) d.assign(v.size(), 0);
        for (std::size_t i = 0; i < v.size(); ++i) d[i] += v[i];
    };
    for (const auto& c : all_) {
        if (c->out >= 0) add(c->out, c->out_counts);
        if (c->in >= 0) add(c->in, c->in_counts);
    }
    return t;
}

}  // namespace ternion::chip
