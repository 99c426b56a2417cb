// libFuzzer harness: the IDX reader (open_input on MNIST-style images, gzip-compressed or raw)
// on arbitrary bytes, with a small memory limit so that a declared size is refused, not spent.
#include "models/inputs/inputs.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The name marks the file as IDX images (looks_like_idx); no sibling labels file exists.
    const std::string p = ternion::fuzz::as_file(data, size, "-images-idx3-ubyte");
    ternion::fuzz::expect_clean([&] {
        ternion::InputOptions o;
        o.timesteps = 2;
        o.max_memory = std::uint64_t{256} << 20;
        ternion::open_input(p, o);
    });
    return 0;
}
