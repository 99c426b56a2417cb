// Registration of every attention node type with the model loader's factory.
#pragma once
#include "sim/core/node_spec.hpp"

namespace ternion {

// Both families: attention/spiking (register_spiking_attention_nodes) and attention/ann
// (register_ann_attention_nodes).
void register_attention_nodes(NodeFactory& f);

}  // namespace ternion
