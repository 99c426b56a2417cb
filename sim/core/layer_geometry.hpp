// What a chip mapper (hw/chip) needs to know of a node's structure, as typed facts: whether it
// is a weighted connection (with its kernel, stride, padding and bias), a pooling window or a
// pure reshape. Mappers never read node type names; a node that reports nothing is `other`.
#pragma once
#include <cstdint>
#include <vector>

namespace ternion {

struct LayerGeometry {
    enum class Kind { other, connection, pooling, reshape };
    enum class Pool { none, sum, average, max };
    Kind kind = Kind::other;
    // connection: a Linear/Affine has kernel 1x1 and no spatial map; a Conv2d its window.
    // pooling: the window. Heights and widths in that order.
    std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
    std::int64_t dilation_h = 1, dilation_w = 1;
    std::int64_t in_channels = 0, out_channels = 0, groups = 1;
    bool spatial = false;  // a 2-d convolution or pooling over [C, H, W]
    bool bias = false;     // the connection adds a bias (its own, or a folded BatchNorm's)
    Pool pool = Pool::none;
};

// The non-zero weights of a connection per input (the synapses one input drives: its fan-out)
// and per output (its fan-in), for mappers of chips that budget synapses per neuron (Xylo).
// Not part of LayerGeometry: these are vectors over the neurons, counted on request only.
// Empty for nodes without a weight matrix.
struct ConnectionNonzeros {
    std::vector<std::int64_t> per_input, per_output;
};

}  // namespace ternion
