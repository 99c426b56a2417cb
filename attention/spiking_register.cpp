#include "attention/register.hpp"

namespace ternion {

void register_spiking_attention_nodes(NodeFactory&) {}

}  // namespace ternion
