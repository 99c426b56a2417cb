#include "attention/register.hpp"

#include "attention/ann/ann_attention.hpp"
#include "attention/spiking/spiking_attention.hpp"

namespace ternion {

void register_attention_nodes(NodeFactory& f) {
    register_spiking_attention_nodes(f);
    register_ann_attention_nodes(f);
}

}  // namespace ternion
