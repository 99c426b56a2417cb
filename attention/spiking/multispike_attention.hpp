// ternion.MultiSpikeAttention: the linear attention of Spike-driven Transformer V3
// (E-SpikeFormer) on integer spikes. Q, K and V are integer counts k = round(clamp(BN(x W^T),
// 0, D)) (MultiSpike), each head computes the exact integer product Q K^T V, and the output is
// the count round(clamp(scale * Q K^T V, 0, D)). Its own file and header, beside the SJLIF-based
// variants of spiking_attention.hpp, because V may be wider than Q and K and every operand is
// an integer count rather than a spike. docs/transformer-format.md §3.6 lists the parameters.
#pragma once
#include <memory>

#include "sim/core/node.hpp"
#include "sim/core/node_spec.hpp"

namespace ternion {

std::unique_ptr<Node> build_multispike_attention(const NodeSpec& spec);
// The conformance harness's example: 4 tokens of 8 channels, 2 heads, V twice as wide.
NodeExample multispike_attention_example();

}  // namespace ternion
