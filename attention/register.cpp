#include "attention/register.hpp"

namespace ternion {

void register_attention_nodes(NodeFactory& f) {
    register_spiking_attention_nodes(f);
    register_ann_attention_nodes(f);
}

}  // namespace ternion
