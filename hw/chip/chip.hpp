// Chips as data and networks placed on them. A chip description (hw/chips/*.json, found like the
// hardware profiles) lists the cores with their memories and the limits of a layer, each with
// its source; `map_model` places a model's layers on the cores under those limits and reports
// every layer's memory needs, its core, and, when it does not fit, the limit it breaks.
// The first family is DYNAP-CNN (sinabs-dynapcnn's memory rules and core assignment);
// docs/chips.md describes the rules and the file format.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "sim/core/graph.hpp"

namespace ternion::chip {

struct Core {
    std::int64_t kernel_memory = 0, neuron_memory = 0, bias_memory = 0;  // entries
};

struct Limits {
    std::int64_t max_kernel = 0, max_out_channels = 0, max_input_h = 0, max_input_w = 0;
    std::vector<std::int64_t> strides, pools;
    std::int64_t max_padding = 0;
    int weight_bits = 0, state_bits = 0;
};

struct Chip {
    std::string name, description, family, technology, path;
    std::vector<Core> cores;
    Limits limits;
    std::string cores_source, limits_source, memory_source, assignment_source;
};

// A name -> <chip dir>/<name>.json (chip_search_dirs()); a value with '/' or ending in .json is a
// path. Throws OptionError("chip") for an unknown name, InputError(file, key, what) for a bad file.
Chip load_chip(const std::string& name_or_path);
Chip parse_chip(const nlohmann::json& doc, const std::string& file);
// $TERNION_CHIP_DIR; else $TERNION_DATA_DIR/chips; else <exe>/../share/ternion/chips, then the
// source tree's hw/chips.
std::vector<std::string> chip_search_dirs();
// (name, description) of every chip file, sorted by name.
std::vector<std::pair<std::string, std::string>> list_chips();

// One layer of the chip: a connection node, its spiking neurons and its pooling, placed together.
struct ChipLayer {
    std::vector<std::string> nodes;  // graph nodes it holds, in order
    std::string connection;          // the weighted node (names errors and the report)
    std::int64_t in_channels = 0, out_channels = 0, kernel_h = 0, kernel_w = 0;
    std::int64_t out_h = 1, out_w = 1;  // the convolution's map, before pooling
    std::int64_t pool = 1;              // sum-pooling size (1: none)
    std::int64_t kernel_memory = 0, neuron_memory = 0, bias_memory = 0;
    std::vector<int> fits;  // cores whose memories hold it
    int core = -1;          // assigned core
};

struct Placement {
    std::string chip, family;
    std::vector<ChipLayer> layers;
    std::vector<std::string> notes;  // choices made while mapping (average pooling as sum, ...)
};

// Places `g` on `c`. Throws InputError(origin, "nodes/<node>", what) naming the node, the limit,
// what it needs and what the chip holds, when a layer breaks a limit or no assignment exists.
Placement map_model(const Graph& g, const Chip& c);

nlohmann::json placement_json(const Placement& p, const Chip& c);
std::string placement_text(const Placement& p, const Chip& c);

}  // namespace ternion::chip
