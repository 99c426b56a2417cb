// Readers that fill the neuron rules of sim/kernels/neuron_rules.hpp from a model file's
// parameters, one per neuron kind, so that a ternion.SJLIF node and the LIFs inside an
// attention node (prefix "lif_", "attn_") accept the same names with the same checks and
// defaults. Parameter names and meanings: docs/model-format.md, docs/transformer-format.md.
#pragma once
#include <string>

#include "sim/core/node_spec.hpp"
#include "sim/kernels/neuron_rules.hpp"

namespace ternion {

// SpikingJelly LIF charge: `tau` (steps, default 2) or, when `parametric` and the file has it,
// ParametricLIF's `w`; `decay_input` 0/1 (1); `v_reset` (0); `leak_form` "scale" or
// "difference" (default: scale at v_reset 0, else difference). Names are prefixed with `pre`.
kernels::SjLifCharge read_sj_lif_charge(const NodeSpec& spec, const std::string& pre,
                                        bool parametric = false);
// The attention nodes' LIF: the charge above and one `v_threshold` (default `vth_default`).
kernels::SjLif read_sj_lif(const NodeSpec& spec, const std::string& pre, float vth_default);
// The attention nodes' TSN: one `decay` (default 0.5) and one `v_threshold` (`vth_default`).
kernels::Tsn read_tsn(const NodeSpec& spec, const std::string& pre, float vth_default);
// Range checks shared by the neuron node types (per-neuron arrays) and the attention nodes.
void check_tsn_decay(const NodeSpec& spec, const std::string& name, float decay);
void require_positive(const NodeSpec& spec, const std::string& name, float value);

}  // namespace ternion
