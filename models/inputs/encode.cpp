// `ternion encode`: analog data written as spike files.
#include "models/inputs/inputs.hpp"
#include "models/inputs/sources.hpp"
#include "sim/core/rng.hpp"
#include "sim/io/file_guard.hpp"
#include "sim/io/h5io.hpp"

namespace ternion {

namespace {

// Steps [0, T) of every sample of `src` as int8 [samples, T, ...shape]; counts the spikes.
std::vector<std::int8_t> encode_source(const InputSource& src, std::int64_t T, std::uint64_t seed,
                                       std::uint64_t& spikes) {
    const std::int64_t S = src.num_samples(), n = numel(src.sample_shape());
    std::vector<std::int8_t> out(static_cast<std::size_t>(S * T * n), 0);
    Activity a;
    a.resize(n);
    OpCounts ops;
    for (std::int64_t s = 0; s < S; ++s)
        for (std::int64_t t = 0; t < T; ++t) {
            a.clear();
            src.fill(s, t, seed, a, ops);
            for (auto i : a.active) {
                out[static_cast<std::size_t>((s * T + t) * n + i)] =
                    static_cast<std::int8_t>(a.values[i]);
                ++spikes;
            }
        }
    return out;
}

Shape spike_dims(const InputSource& src, std::int64_t T) {
    Shape dims{src.num_samples(), T};
    auto sh = src.sample_shape();
    dims.insert(dims.end(), sh.begin(), sh.end());
    return dims;
}

// Direct coding is a current, not spikes: `ternion encode` has nothing to write for it.
void check_spiking_encoding(Encoding e, const std::string& what) {
    if (e == Encoding::direct)
        throw OptionError("encoding",
                          "direct coding is analog" + what + ": choose poisson or latency");
}

// The Input nodes' sources of a file with /inputs/<node>/..., in the groups' sorted order.
std::vector<std::unique_ptr<InputSource>> open_node_groups(const h5::Reader& r,
                                                           const EncodingChoice& enc,
                                                           InputOptions o, std::int64_t T,
                                                           std::vector<std::string>& names) {
    names = r.children("/inputs");
    check_encoding_nodes(enc.nodes, names);
    o.node_encodings = enc.nodes;
    o.layout = Layout::samples_first;
    auto v = open_inputs(r.path(), names, o);
    for (std::size_t k = 0; k < v.size(); ++k) {
        const std::int64_t fixed = v[k]->fixed_timesteps();
        if (fixed == 0)
            check_spiking_encoding(for_node(o, names[k]).encoding,
                                   " (Input node '" + names[k] + "')");
        else if (fixed != T)
            r.fail(v[k]->dataset(), "holds " + std::to_string(fixed) + " steps, --timesteps is " +
                                        std::to_string(T) +
                                        ": spike datasets are copied as they are");
    }
    return v;
}

}  // namespace

std::uint64_t encode_file(const std::string& in_path, const std::string& out_path,
                          const EncodingChoice& enc, std::int64_t T, std::uint64_t seed,
                          const std::string& labels_path, std::uint64_t max_memory) {
    if (T <= 0) throw OptionError("timesteps", "must be positive");
    if (T > 1000000) throw OptionError("timesteps", "absurdly large");
    InputOptions o;
    o.encoding = enc.all.value_or(Encoding::poisson);
    o.timesteps = T;
    o.labels = labels_path;
    o.max_memory = max_memory;
    std::vector<std::unique_ptr<InputSource>> srcs;
    std::vector<std::string> names;  // empty: one /data
    const bool groups = !looks_like_idx(in_path) && !ends_with(in_path, ".npy") &&
                        holds_node_groups(h5::Reader(in_path));
    if (groups) {
        if (!labels_path.empty())
            throw OptionError("labels", "applies to IDX images; an HDF5 input carries /labels");
        srcs = open_node_groups(h5::Reader(in_path), enc, o, T, names);
    } else {
        if (!enc.nodes.empty())
            throw OptionError("encoding", "'" + enc.nodes[0].first +
                                              "=...' names an Input node, but " + in_path +
                                              " holds one input (/data), not /inputs/<node>/data");
        srcs.push_back(open_input(in_path, o));
        if (srcs[0]->fixed_timesteps() > 0)
            throw InputError(in_path, srcs[0]->dataset(),
                             "already holds steps (spikes or frames): encode reads analog /data");
        check_spiking_encoding(o.encoding, "");
    }
    std::int64_t bytes = 0;
    for (const auto& src : srcs) bytes += src->num_samples() * T * numel(src->sample_shape());
    if (bytes > kMaxInputBytes) throw OptionError("timesteps", "output would exceed 8 GiB");
    // The spike tensors are built in memory, then the file from them (at most about their size,
    // compressed), before it is written.
    check_memory_limit(static_cast<double>(resident_bytes()) + 2.0 * static_cast<double>(bytes),
                       max_memory, "encoding " + in_path);
    std::uint64_t spikes = 0;
    std::vector<std::vector<std::int8_t>> out;
    for (std::size_t k = 0; k < srcs.size(); ++k)
        out.push_back(encode_source(*srcs[k], T, input_seed(seed, k), spikes));
    h5::write_atomically(out_path, [&](const std::string& tmp) {
        h5::Writer w(tmp);
        for (std::size_t k = 0; k < srcs.size(); ++k) {
            const std::string ds = names.empty() ? "/spikes" : "/inputs/" + names[k] + "/spikes";
            if (!names.empty()) w.group("/inputs/" + names[k]);
            w.write(ds, out[k], spike_dims(*srcs[k], T));
            const bool copied = srcs[k]->fixed_timesteps() > 0;
            w.attr(ds, "encoding", copied ? "copied" : input_encoding(*srcs[k]));
            w.attr(ds, "seed", static_cast<std::int64_t>(seed));
            w.attr(ds, "source", in_path + (names.empty() ? "" : ": " + srcs[k]->dataset()));
        }
        const auto& labels = srcs[0]->labels();
        if (!labels.empty()) w.write("/labels", labels, {static_cast<std::int64_t>(labels.size())});
        w.close();
    });
    return spikes;
}

}  // namespace ternion
