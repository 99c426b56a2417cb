#include "trace.hpp"

#include <algorithm>

#include "h5io.hpp"

namespace ternion {

TraceRecorder::TraceRecorder(const Graph& g, const TraceOptions& o, std::int64_t first,
                             std::int64_t samples, std::int64_t T)
    : g_(g), o_(o), first_(first), samples_(samples), T_(T) {
    slot_.assign(static_cast<std::size_t>(g.size()), -1);
    std::vector<int> chosen;
    if (o.nodes.empty()) {
        for (int u : g.order())
            if (g.node(u).is_spiking()) chosen.push_back(u);
    } else {
        for (const auto& name : o.nodes) {
            int u = g.find(name);
            if (u < 0) throw OptionError("record-nodes", "no node named '" + name + "'");
            chosen.push_back(u);
        }
    }
    for (int u : chosen) {
        const std::int64_t n = g.node(u).out_size();
        const auto cells = static_cast<std::uint64_t>(samples * T * n);
        if (o.spikes) bytes_ += cells;
        if (o.membrane) bytes_ += cells * sizeof(float);
    }
    if (bytes_ > o.max_bytes)
        throw OptionError("max-trace-bytes", "the trace would take " + std::to_string(bytes_) +
                                                 " bytes, over the limit of " +
                                                 std::to_string(o.max_bytes) +
                                                 " (record fewer nodes, samples or steps)");
    for (int u : chosen) {
        Rec r;
        r.node = u;
        r.n = g.node(u).out_size();
        const auto cells = static_cast<std::size_t>(samples * T * r.n);
        if (o.spikes) r.spikes.assign(cells, 0);
        if (o.membrane) r.membrane.assign(cells, 0.0f);
        slot_[static_cast<std::size_t>(u)] = static_cast<int>(recs_.size());
        recs_.push_back(std::move(r));
    }
}

bool TraceRecorder::wants(int node) const {
    return slot_[static_cast<std::size_t>(node)] >= 0;
}

void TraceRecorder::on_step(std::int64_t sample, std::int64_t step, int node, const Node& n,
                            const Activity& out, const NodeState* state, const OpCounts&) {
    Rec& r = recs_[static_cast<std::size_t>(slot_[static_cast<std::size_t>(node)])];
    const auto base = static_cast<std::size_t>(((sample - first_) * T_ + step) * r.n);
    if (o_.spikes)
        for (auto i : out.active) {
            const float v = out.values[i];
            r.spikes[base + i] = static_cast<std::int8_t>(v > 0 ? 1 : (v < 0 ? -1 : 0));
        }
    if (o_.membrane) {
        std::vector<float> m;
        if (state && n.membrane(state, m))
            std::copy(m.begin(), m.end(), r.membrane.begin() + static_cast<std::ptrdiff_t>(base));
        else
            std::copy(out.values.begin(), out.values.end(),
                      r.membrane.begin() + static_cast<std::ptrdiff_t>(base));
    }
}

void TraceRecorder::write(const std::string& path,
                          const std::vector<std::pair<std::string, std::string>>& meta) const {
    h5::write_atomically(path, [&](const std::string& tmp) {
        h5::Writer w(tmp);
        w.attr("/", "__type__", std::string("NIRGraphData"));
        w.group("/nodes");
        for (const auto& r : recs_) {
            const Node& nd = g_.node(r.node);
            const std::string base = "/nodes/" + nd.name();
            w.group(base + "/observables");
            w.attr(base, "__type__", std::string("NIRNodeData"));
            const Shape dims{samples_, T_, r.n};
            if (o_.spikes) {
                const std::string obs = base + "/observables/spikes";
                w.group(obs);
                w.attr(obs, "__type__", std::string("TimeGriddedData"));
                w.write(obs + "/data", r.spikes, dims);
                w.attr(obs + "/data", "dt", o_.dt);
                w.attr(obs, "dt", o_.dt);
            }
            if (o_.membrane) {
                const std::string obs = base + "/observables/v";
                w.group(obs);
                w.attr(obs, "__type__", std::string("TimeGriddedData"));
                w.write(obs + "/data", r.membrane, dims);
                w.attr(obs + "/data", "dt", o_.dt);
                w.attr(obs, "dt", o_.dt);
            }
        }
        w.group("/ternion/metadata");
        for (const auto& [k, v] : meta) w.attr("/ternion/metadata", k, v);
        w.close();
    });
}

}  // namespace ternion
