// Test helper: writes small models in NIR's HDF5 graph layout (and input files) so tests can
// load them through the real loader, exactly as users' files are.
#pragma once
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "sim/io/h5io.hpp"

namespace ternion::test {

struct Param {
    std::vector<double> v;
    Shape dims;  // empty: scalar
    std::string s;
    bool is_string = false;
};

inline Param P(double x) {
    return {{x}, {}, "", false};
}
inline Param P(std::vector<double> v, Shape dims) {
    return {std::move(v), std::move(dims), "", false};
}
inline Param P(std::vector<double> v) {
    Shape d{static_cast<std::int64_t>(v.size())};
    return {std::move(v), d, "", false};
}
inline Param S(std::string s) {
    return {{}, {}, std::move(s), true};
}

struct NodeDef {
    std::string name, type;
    std::map<std::string, Param> params;
};

class ModelFile {
  public:
    ModelFile& node(std::string name, std::string type, std::map<std::string, Param> params = {}) {
        nodes_.push_back({std::move(name), std::move(type), std::move(params)});
        return *this;
    }
    ModelFile& edge(std::string a, std::string b) {
        edges_.push_back(std::move(a));
        edges_.push_back(std::move(b));
        return *this;
    }
    // Edges along `path`: its first node into the second, the second into the third, ...
    ModelFile& chain(std::initializer_list<std::string> path) {
        for (auto it = path.begin(); it + 1 < path.end(); ++it) edge(*it, *(it + 1));
        return *this;
    }
    ModelFile& meta(std::string k, double v) {
        meta_[k] = v;
        return *this;
    }
    void write(const std::string& path) const {
        h5::Writer w(path);
        w.write_string("/version", "1.0");
        w.write_string("/node/type", "NIRGraph");
        w.group("/node/nodes");
        for (const auto& n : nodes_) {
            const std::string g = "/node/nodes/" + n.name;
            w.group(g);
            w.write_string(g + "/type", n.type);
            for (const auto& [k, p] : n.params) {
                if (p.is_string)
                    w.write_string(g + "/" + k, p.s);
                else
                    w.write(g + "/" + k, p.v, p.dims, false);
            }
        }
        w.write_strings("/node/edges", edges_, {static_cast<std::int64_t>(edges_.size() / 2), 2});
        for (const auto& [k, v] : meta_)
            w.write("/node/metadata/" + k, std::vector<double>{v}, {}, false);
        w.close();
    }

  private:
    std::vector<NodeDef> nodes_;
    std::vector<std::string> edges_;
    std::map<std::string, double> meta_;
};

// Input[n] -> Scale (`scale`) -> ternion.TernaryLIF "neuron" (decay 0.7, threshold 0.8) ->
// Output: spike input of both polarities makes the neuron emit -1 and +1.
inline ModelFile scaled_ternary_lif(std::int64_t n, double scale) {
    ModelFile f;
    f.node("input", "Input", {{"shape", P({static_cast<double>(n)})}})
        .node("scale", "Scale", {{"scale", P(scale)}})
        .node("neuron", "ternion.TernaryLIF", {{"decay", P(0.7)}, {"v_threshold", P(0.8)}})
        .node("output", "Output")
        .chain({"input", "scale", "neuron", "output"});
    return f;
}

// A unique temporary path, removed by the destructor.
class TempFile {
  public:
    explicit TempFile(const std::string& suffix = ".h5") {
        static int counter = 0;
        path_ =
            (std::filesystem::temp_directory_path() / ("ternion-test-" + std::to_string(getpid()) +
                                                       "-" + std::to_string(counter++) + suffix))
                .string();
    }
    ~TempFile() {
        std::error_code ec;
        std::filesystem::remove(path_, ec);
    }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

// Writes /spikes int8 [S, T, ...shape].
inline void write_spikes(const std::string& path, const std::vector<std::int8_t>& v, Shape dims,
                         const std::vector<std::int64_t>& labels = {}) {
    h5::Writer w(path);
    w.write("/spikes", v, dims);
    if (!labels.empty()) w.write("/labels", labels, {static_cast<std::int64_t>(labels.size())});
    w.close();
}

inline void write_data(const std::string& path, const std::vector<float>& v, Shape dims) {
    h5::Writer w(path);
    w.write("/data", v, dims);
    w.close();
}

}  // namespace ternion::test
