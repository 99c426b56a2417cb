// Opening a run's input file, by format, for one Input node or several.
#include <optional>

#include "models/inputs/inputs.hpp"
#include "models/inputs/sources.hpp"
#include "sim/io/h5io.hpp"

namespace ternion {

std::unique_ptr<InputSource> open_input(const std::string& path, const InputOptions& o) {
    if (looks_like_idx(path)) return open_idx(path, o);
    if (ends_with(path, ".npy")) {
        if (!o.labels.empty())
            throw OptionError("labels", "applies to IDX images; a .npy input carries no labels");
        return open_npy(path, o);
    }
    if (!o.labels.empty())
        throw OptionError("labels", "applies to IDX images; an HDF5 input carries /labels");
    h5::Reader r(path);
    if (r.exists("/spikes") + r.exists("/data") + r.exists("/frames") > 1)
        r.fail("", "has more than one of /spikes, /data and /frames: keep one");
    return open_h5_input(r, o, "");
}

std::vector<std::unique_ptr<InputSource>> open_inputs(const std::string& path,
                                                      const std::vector<std::string>& nodes,
                                                      const InputOptions& o) {
    std::vector<std::unique_ptr<InputSource>> v;
    const bool hdf5 = !looks_like_idx(path) && !ends_with(path, ".npy");
    if (nodes.size() <= 1) {
        // One Input node: /spikes or /data, or else its own /inputs/<node> group.
        std::optional<h5::Reader> r;
        if (hdf5 && nodes.size() == 1) r.emplace(path);
        const InputOptions on = nodes.empty() ? o : for_node(o, nodes[0]);
        if (!r || !holds_node_groups(*r)) {
            v.push_back(open_input(path, on));
        } else {
            if (!o.labels.empty())
                throw OptionError("labels", "applies to IDX images; an HDF5 input carries /labels");
            v.push_back(open_h5_input(*r, on, "/inputs/" + nodes[0]));
        }
        return v;
    }
    const std::string need = "the model has " + std::to_string(nodes.size()) + " Input nodes (" +
                             joined(nodes) +
                             "), each read from /inputs/<node>/spikes or /data of an HDF5 file";
    if (!hdf5) throw InputError(path, "", "holds one array: " + need);
    if (!o.labels.empty())
        throw OptionError("labels", "applies to IDX images; an HDF5 input carries /labels");
    h5::Reader r(path);
    for (std::size_t k = 0; k < nodes.size(); ++k) {
        v.push_back(open_h5_input(r, for_node(o, nodes[k]), "/inputs/" + nodes[k],
                                  k ? &v[0]->labels() : nullptr));
        if (v[k]->num_samples() != v[0]->num_samples())
            r.fail(v[k]->dataset(), "has " + std::to_string(v[k]->num_samples()) + " samples, " +
                                        v[0]->dataset() + " has " +
                                        std::to_string(v[0]->num_samples()));
    }
    return v;
}

}  // namespace ternion
