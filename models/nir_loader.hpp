// Loads models stored in NIR's HDF5 graph layout (plus ternion.* extension node types) into a
// Graph. NIR fixes no time step, discretisation or reset: the caller's choices win, then the
// file's metadata, then documented defaults; every fallback is reported in LoadReport::notes.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/graph.hpp"
#include "sim/core/node_spec.hpp"

namespace ternion {

struct UserLoadOptions {
    std::optional<double> dt;
    std::optional<std::string> discretization;  // euler | exact
    std::optional<std::string> reset;           // zero | subtract
    std::optional<std::string> from;  // the framework that wrote the file (--from), see dialects()
    bool allow_unstable = false;      // --allow-unstable: accept Euler decays outside [0, 1)
    bool ignore_unknown = false;  // --ignore-unknown-params: extra fields are noted, not refused
    bool weight_codebook = true;
};

// The load note listing parameters ignored under --ignore-unknown-params.
std::string ignored_note(const std::vector<std::string>& ignored);

struct LoadReport {
    LoadOptions used;
    std::vector<std::string> notes;  // what was assumed, for the user
    std::string dt_source, discretization_source, reset_source;
    std::string dialect_source;  // "option --from", "file metadata" or "default"
};

// The import dialects (`--from`): what each framework's own simulation does that its NIR
// exporter does not write. Documented in docs/bringing-a-model.md.
struct Dialect {
    std::string name;          // nir | snntorch | norse | sinabs | spikingjelly
    std::optional<double> dt;  // seconds per step the exporter's tau assume
    // The framework's conventions as load options: `dialect` (the name), discretization,
    // reset, compare_ge, reset_delay, start_at_rest, unit_current_gain, unit_li_gain and
    // recurrent_last. Its dt and the user's own switches keep their defaults.
    LoadOptions conventions;
    std::string summary;  // one line for the run header
};
const std::vector<Dialect>& dialects();
// The dialect called `name`; throws OptionError("from") naming the known ones otherwise.
const Dialect& find_dialect(const std::string& name);

// All node types ternion knows (synaptic, neuron, attention).
const NodeFactory& default_factory();

std::unique_ptr<Graph> load_model(const std::string& path, const UserLoadOptions& user,
                                  LoadReport& report);

// What a model file's metadata says about the conventions it was written in; each optional.
struct ModelConventions {
    std::optional<std::string> from, discretization, reset;
    std::optional<double> dt;
};
// The options a model is built with: the caller's, else the file's, else its framework's
// (dialect), else NIR's; `report` says where each came from. Errors name `origin`.
LoadOptions resolve_load_options(const UserLoadOptions& user, const ModelConventions& file,
                                 const std::string& origin, LoadReport& report);

// Where the bundled models and test set are looked up: $TERNION_DATA_DIR/bundled when set; else
// <exe>/../share/ternion/bundled, then the source tree's models/bundled (see
// sim/core/data_path.hpp).
std::vector<std::string> bundled_search_dirs();
// The path of a bundled file (e.g. "bsa_digits.h5") in the first of bundled_search_dirs() that
// holds it; throws InputError naming every directory searched when none does.
std::string bundled_path(const std::string& file);

}  // namespace ternion
