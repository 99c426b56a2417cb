// How node types are built from a model file. A NodeSpec gives validated access to the
// parameters stored under one node's group (NIR layout: one dataset per parameter); a
// NodeFactory maps type strings ("LIF", "Conv2d", "ternion.BSA", ...) to builders.
// Each module registers its types: register_synaptic_nodes (sim), register_neuron_nodes
// (neuron), register_attention_nodes (attention).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "h5io.hpp"
#include "node.hpp"

namespace ternion {

// Settings that NIR leaves open; the loader fills them from options and file metadata.
struct LoadOptions {
    double dt = 1e-3;                      // seconds per step
    std::string discretization = "euler";  // "euler" | "exact"
    std::string reset = "zero";            // "zero" | "subtract"
    bool weight_codebook = true;           // lossless shared-value weight storage
    int threads = 1;                       // worker threads: sizes row blocks of large layers
    // Conventions of the framework that wrote the file (`--from`, docs/bringing-a-model.md);
    // a node's own datasets (compare, reset_mode, reset_delay, initial, input_gain) win.
    std::string dialect = "nir";     // nir | snntorch | norse | sinabs | spikingjelly
    bool compare_ge = false;         // IF/LIF/CubaLIF fire on v >= v_threshold (else >)
    bool reset_delay = false;        // the reset of a spike acts at the next step (snnTorch)
    bool start_at_rest = false;      // membranes start at v_leak (IF: v_reset), not 0
    bool unit_current_gain = false;  // CubaLIF/CubaLI: x enters the current with gain w_in
    bool unit_li_gain = false;       // LI: x enters the membrane with gain r
    bool allow_unstable = false;     // accept an Euler decay 1 - dt/tau outside [0, 1)
};

class NodeSpec {
  public:
    NodeSpec(const h5::Reader& file, std::string group, std::string name, std::string type,
             const LoadOptions& opts)
        : file_(file),
          group_(std::move(group)),
          name_(std::move(name)),
          type_(std::move(type)),
          opts_(opts) {}

    const std::string& name() const { return name_; }
    const std::string& type() const { return type_; }
    const LoadOptions& options() const { return opts_; }
    const h5::Reader& file() const { return file_; }
    const std::string& group() const { return group_; }  // "/node/nodes/<name>"

    bool has(const std::string& param) const;
    // Float array; every value finite. `dims` receives the stored shape.
    std::vector<float> floats(const std::string& param, Shape* dims = nullptr) const;
    std::vector<double> doubles(const std::string& param, Shape* dims = nullptr) const;
    std::vector<std::int64_t> ints(const std::string& param, Shape* dims = nullptr) const;
    double scalar(const std::string& param) const;
    double scalar_or(const std::string& param, double dflt) const;
    // A scalar that must be integral (1.5 is refused, 2.0 accepted).
    std::int64_t integer(const std::string& param) const;
    std::int64_t integer_or(const std::string& param, std::int64_t dflt) const;
    std::string string(const std::string& param) const;
    std::optional<std::string> string_opt(const std::string& param) const;
    // A per-neuron parameter: a scalar (broadcast) or an array of exactly n values.
    std::vector<float> per_neuron(const std::string& param, std::int64_t n) const;
    std::vector<float> per_neuron_or(const std::string& param, std::int64_t n, float dflt) const;

    [[noreturn]] void fail(const std::string& param, const std::string& what) const {
        throw InputError(file_.path(), "nodes/" + name_ + (param.empty() ? "" : "/" + param), what);
    }

  private:
    const h5::Reader& file_;
    std::string group_, name_, type_;
    LoadOptions opts_;
};

using NodeBuilder = std::function<std::unique_ptr<Node>(const NodeSpec&)>;

class NodeFactory {
  public:
    void add(const std::string& type, NodeBuilder b, std::string description);
    bool knows(const std::string& type) const { return builders_.count(type) > 0; }
    std::unique_ptr<Node> build(const NodeSpec& spec) const;
    // (type, description) pairs, sorted by type.
    std::vector<std::pair<std::string, std::string>> types() const;

  private:
    std::map<std::string, std::pair<NodeBuilder, std::string>> builders_;
};

void register_synaptic_nodes(NodeFactory& f);  // sim/synaptic.cpp

}  // namespace ternion
