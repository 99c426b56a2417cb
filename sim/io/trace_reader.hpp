// Reads a trace written by TraceRecorder (sim/io/trace.hpp, docs/traces.md): NIR's NIRGraphData
// observables plus ternion's /ternion groups. `ternion trace info` and the attention analyses
// both read through it, so the layout is checked one way and every error names the file and
// the field ("<file>: <field>: <what>").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/io/h5io.hpp"

namespace ternion {

enum class ObservableKind { time_gridded, event, valued_event, attention };

// One group /nodes/<node>/observables/<name>.
struct Observable {
    std::string name;   // "spikes", "v", "attention", ...
    std::string group;  // its path in the file
    std::string type;   // its __type__ ("attention" for attention maps, which have none)
    ObservableKind kind = ObservableKind::time_gridded;
};

// An h5::Reader (datasets, attributes of any object: attr_string in the attribute's own
// character set, attr_double, attr_ints; stored_bytes; fail) that knows the trace layout.
class TraceReader : public h5::Reader {
  public:
    // `nir`: refuse a file whose root __type__ is not NIRGraphData or that has no /nodes group.
    // `none`: open any HDF5 file (the analyses also read maps under /ternion/attention alone).
    enum class Check { nir, none };
    explicit TraceReader(const std::string& file, Check check = Check::nir);

    // Children of /nodes, sorted (empty if there is no /nodes).
    std::vector<std::string> nodes() const;
    // The observables of one node; throws for a missing observables group, a missing
    // __type__ or an unknown one.
    std::vector<Observable> observables(const std::string& node) const;

    // Attributes that must be there, throwing "<obj>@<name>: missing ..." when absent.
    std::string need_string(const std::string& obj, const std::string& name) const;
    double need_double(const std::string& obj, const std::string& name) const;
    // Every string or numeric attribute of `obj` as text (numbers as %.17g), in name order.
    std::vector<std::pair<std::string, std::string>> attrs_text(const std::string& obj) const;

    // A dataset that must exist with `rank` dimensions.
    h5::DatasetInfo need_dataset(const std::string& ds, std::size_t rank) const;

    // ternion's groups.
    std::vector<std::string> kinds() const;  // /ternion/kinds (op kinds), empty if absent
    // Nodes recorded in /ternion/<group> ("ops", "energy", "attention"), nullopt if absent.
    std::optional<std::vector<std::string>> ternion_nodes(const std::string& group) const;
    // Attributes of /ternion/metadata as text (empty if absent).
    std::vector<std::pair<std::string, std::string>> metadata() const;
    // Samples recorded (length of /ternion/samples), nullopt if absent.
    std::optional<std::int64_t> samples() const;

    // Where a node's attention maps are: NIR's /nodes/<node>/observables/attention if that
    // group exists, else /ternion/attention/<node> if that does, else the NIR path.
    std::string attention_group(const std::string& node) const;
    // Nodes whose attention group holds weights or scores, sorted.
    std::vector<std::string> attention_nodes() const;

  private:
    std::optional<std::vector<std::string>> children_if(const std::string& group) const;
};

}  // namespace ternion
