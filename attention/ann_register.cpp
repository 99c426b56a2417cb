#include "attention/register.hpp"

namespace ternion {

void register_ann_attention_nodes(NodeFactory&) {}

}  // namespace ternion
