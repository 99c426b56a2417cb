// Input files: spike tensors (`/spikes` int8 [samples, T, ...] in {-1,0,1}) replayed as events,
// or analog data (`/data` float32 [samples, ...]) encoded per step as direct current, Poisson
// (Bernoulli per step) or latency spikes, with optional `/labels` int64 [samples]. IDX files
// (MNIST, Fashion-MNIST; gzip-compressed or raw) are analog data too: unsigned bytes / 255, with
// labels from an explicit IDX labels file or the sibling `...-labels-idx1-ubyte[.gz]`.
// Layout and encodings are documented in docs/inputs.md.
#pragma once
#include <memory>
#include <string>

#include "sim/engine.hpp"

namespace ternion {

enum class Encoding { direct, poisson, latency };
Encoding parse_encoding(const std::string& s);  // throws OptionError("encoding")
const char* encoding_name(Encoding e);

struct InputOptions {
    Encoding encoding = Encoding::direct;
    std::int64_t timesteps = 0;  // needed by latency coding
    // An IDX labels file for IDX images; empty: the images' sibling labels file, if it exists.
    std::string labels = {};
};

// Whether `path` is read as IDX: its name holds "idx" or "ubyte", or it starts like an IDX file
// (gzip magic, or 0x00 0x00 type ndims).
bool looks_like_idx(const std::string& path);

// The sibling labels file of IDX images ("t10k-images-idx3-ubyte.gz" ->
// "t10k-labels-idx1-ubyte.gz"), or "" when the name has no "images" in it.
std::string idx_sibling_labels(const std::string& images_path);

std::unique_ptr<InputSource> open_input(const std::string& path, const InputOptions& opts);

// The Fashion-MNIST test images of Debian's dataset-fashion-mnist
// (/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz); throws InputError when absent.
std::string fashion_mnist_test_images();

// Writes analog data as a spike file (`ternion encode`). Returns the number of spikes.
std::uint64_t encode_file(const std::string& in_path, const std::string& out_path, Encoding enc,
                          std::int64_t timesteps, std::uint64_t seed,
                          const std::string& labels_path = "");

}  // namespace ternion
