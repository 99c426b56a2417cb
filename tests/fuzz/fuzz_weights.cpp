// libFuzzer harness: the ANN attention weights reader (H5Weights + make_attention) for every
// kind on arbitrary bytes as an HDF5 file.
#include "attention/ann/ann_attention.hpp"
#include "sim/io/h5io.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string p = ternion::fuzz::as_file(data, size, ".h5");
    ternion::fuzz::expect_clean_vetted(p, [&] {
        ternion::h5::Reader r(p);
        ternion::ann::H5Weights w(r);
        for (const auto& kind : ternion::ann::kinds())
            ternion::fuzz::expect_clean([&] { ternion::ann::make_attention(kind, w); });
    });
    return 0;
}
