#include "sim/node_spec.hpp"

namespace ternion {

void register_synaptic_nodes(NodeFactory&) {}

}  // namespace ternion
