// How node types are built from a model file. A NodeSpec gives validated access to the
// parameters stored under one node's group (NIR layout: one dataset per parameter); a
// NodeFactory maps type strings ("LIF", "Conv2d", "ternion.BSA", ...) to builders.
// Each room registers its types: register_synaptic_nodes (sim/synaptic), register_neuron_nodes
// (neuron), register_attention_nodes (attention).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/core/node.hpp"
#include "sim/core/shape.hpp"

namespace ternion {

// Settings that NIR leaves open; the loader fills them from options and file metadata.
struct LoadOptions {
    double dt = 1e-3;                      // seconds per step
    std::string discretization = "euler";  // "euler" | "exact"
    std::string reset = "zero";            // "zero" | "subtract"
    bool weight_codebook = true;           // lossless shared-value weight storage
    // Conventions of the framework that wrote the file (`--from`, docs/bringing-a-model.md);
    // a node's own datasets (compare, reset_mode, reset_delay, initial, input_gain) win.
    std::string dialect = "nir";     // nir | snntorch | norse | sinabs | spikingjelly
    bool compare_ge = false;         // IF/LIF/CubaLIF fire on v >= v_threshold (else >)
    bool reset_delay = false;        // the reset of a spike acts at the next step (snnTorch)
    bool start_at_rest = false;      // membranes start at v_leak (IF: v_reset), not 0
    bool unit_current_gain = false;  // CubaLIF/CubaLI: x enters the current with gain w_in
    bool unit_li_gain = false;       // LI: x enters the membrane with gain r
    // LIF/CubaLIF add the edges closing a cycle into them (a recurrent layer) to the updated
    // state after the other inputs, not summed with them first (snnTorch's RLeaky/RSynaptic).
    bool recurrent_last = false;
    bool allow_unstable = false;  // accept an Euler decay 1 - dt/tau outside [0, 1)
    // Parameter names no node type reads are ignored instead of refused (files that carry
    // extra fields of another tool); the loader lists them in its notes.
    bool ignore_unknown_params = false;
};

// Where a node's parameters come from: a model file's node group (sim/io/h5_params.hpp), memory
// (MapParams: tests, the conformance harness, bindings). A source only stores and reads; NodeSpec
// validates, so every source refuses the same values with the same messages.
class ParamSource {
  public:
    virtual ~ParamSource() = default;
    // The file path or label that error messages name.
    virtual const std::string& origin() const = 0;
    virtual bool has(const std::string& param) const = 0;
    // Callers check has() first.
    virtual bool is_string(const std::string& param) const = 0;
    // The shape as declared, before reading values (a small file may declare a huge array).
    virtual Shape dims(const std::string& param) const = 0;
    virtual std::vector<double> doubles(const std::string& param, Shape* dims) const = 0;
    virtual std::string string(const std::string& param) const = 0;
    // Every parameter name the source holds (groups included), for the unknown-name check; an
    // empty list turns the check off.
    virtual std::vector<std::string> names() const { return {}; }
};

// The datasets of one node group of an HDF5 file; the reader's own checks (declared sizes,
// layouts, kinds) stay in force and name the dataset's full path.
// One node's parameters held in memory: arrays with shapes, scalars (shape {}) and strings.
class MapParams final : public ParamSource {
  public:
    explicit MapParams(std::string label = "<memory>") : label_(std::move(label)) {}
    void set_label(std::string label) { label_ = std::move(label); }
    MapParams& set(const std::string& param, std::vector<double> values, Shape dims);
    MapParams& set(const std::string& param, double scalar) { return set(param, {scalar}, {}); }
    MapParams& set(const std::string& param, std::string text);
    MapParams& set(const std::string& param, const char* text) {
        return set(param, std::string(text));
    }
    void erase(const std::string& param) { values_.erase(param); }
    std::vector<std::string> names() const override;  // sorted
    const std::string& origin() const override { return label_; }
    bool has(const std::string& param) const override { return values_.count(param) > 0; }
    bool is_string(const std::string& param) const override;
    Shape dims(const std::string& param) const override;
    std::vector<double> doubles(const std::string& param, Shape* dims) const override;
    std::string string(const std::string& param) const override;

  private:
    struct Value {
        std::vector<double> numbers;
        Shape dims;
        std::optional<std::string> text;
    };
    const Value& at(const std::string& param) const;
    std::string label_;
    std::map<std::string, Value> values_;
};

class NodeSpec {
  public:
    // Parameters from `src`, which must outlive the spec.
    NodeSpec(const ParamSource& src, std::string name, std::string type, const LoadOptions& opts)
        : src_(&src), name_(std::move(name)), type_(std::move(type)), opts_(opts) {}
    // Parameters from a source the spec shares (a model file's node group: sim/io/h5_params.hpp).
    NodeSpec(std::shared_ptr<const ParamSource> src, std::string name, std::string type,
             const LoadOptions& opts)
        : own_(std::move(src)),
          src_(own_.get()),
          name_(std::move(name)),
          type_(std::move(type)),
          opts_(opts) {}

    const std::string& name() const { return name_; }
    const std::string& type() const { return type_; }
    const LoadOptions& options() const { return opts_; }
    const ParamSource& source() const { return *src_; }
    const std::string& origin() const { return src_->origin(); }

    // Asking for a parameter marks its name as known to the node type (see unknown()).
    bool has(const std::string& param) const {
        consulted_->insert(param);
        return src_->has(param);
    }
    // The source's parameter names the builder never asked for: misspelt or foreign names
    // ("biass"), refused by NodeFactory::build. "type" and NIR's bookkeeping entries
    // (input_type, output_type, metadata) are not parameters.
    std::vector<std::string> unknown() const;
    // The names the builder asked for so far (for "did you mean" suggestions).
    const std::set<std::string>& known() const { return *consulted_; }
    // Declared shape of a present parameter, without reading its values.
    Shape dims(const std::string& param) const;
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
        throw InputError(origin(), "nodes/" + name_ + (param.empty() ? "" : "/" + param), what);
    }

  private:
    std::shared_ptr<const ParamSource> own_;  // set when the spec made its own source
    // Names asked for (has()), shared by copies of the spec.
    std::shared_ptr<std::set<std::string>> consulted_ = std::make_shared<std::set<std::string>>();
    const ParamSource* src_;
    std::string name_, type_;
    LoadOptions opts_;
};

// With LoadOptions::ignore_unknown_params: the spec's names no builder read, as
// "nodes/<node>/<param>" (for the loader's notes); empty otherwise.
std::vector<std::string> ignored_params(const NodeSpec& spec);

using NodeBuilder = std::function<std::unique_ptr<Node>(const NodeSpec&)>;

// One valid parameter set of a node type, kept beside its registration: the conformance harness
// (tests/nodes/test_conformance.cpp) builds, runs and breaks every type from its example.
struct NodeExample {
    enum class Input { binary, ternary, analog };  // what the harness feeds the node
    MapParams params;
    Shape input;  // one step's input shape
    Input kind = Input::binary;
};
using ExampleMaker = std::function<NodeExample()>;

// Deterministic values in +-[0.1, 1), none zero, for examples' weights.
std::vector<double> example_values(std::int64_t n, std::uint64_t seed);

inline NodeExample example_of(Shape input, NodeExample::Input kind = NodeExample::Input::binary) {
    NodeExample e;
    e.input = std::move(input);
    e.kind = kind;
    return e;
}
// `param` = example_values of shape `dims`.
inline void set_example(MapParams& p, const std::string& param, const Shape& dims,
                        std::uint64_t seed) {
    p.set(param, example_values(numel(dims), seed), dims);
}

class NodeFactory {
  public:
    // A type added without an example fails the conformance harness.
    void add(const std::string& type, NodeBuilder b, std::string description,
             ExampleMaker example = {});
    bool knows(const std::string& type) const { return builders_.count(type) > 0; }
    std::unique_ptr<Node> build(const NodeSpec& spec) const;
    // (type, description) pairs, sorted by type.
    std::vector<std::pair<std::string, std::string>> types() const;
    // The type's example, its parameters labelled "<example TYPE>"; nullopt when it has none.
    std::optional<NodeExample> example(const std::string& type) const;

  private:
    struct Entry {
        NodeBuilder build;
        std::string description;
        ExampleMaker example;
    };
    std::map<std::string, Entry> builders_;
};

}  // namespace ternion
