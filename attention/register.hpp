// Registration of every attention node type with the model loader's factory.
#pragma once
#include "sim/core/node_spec.hpp"

namespace ternion {

void register_attention_nodes(NodeFactory& f);          // both families below
void register_spiking_attention_nodes(NodeFactory& f);  // spiking_register.cpp
void register_ann_attention_nodes(NodeFactory& f);      // ann_register.cpp

}  // namespace ternion
