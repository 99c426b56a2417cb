// libFuzzer harness: the .npy spike reader (open_input on a NumPy file) on arbitrary bytes,
// both layouts, with a small memory limit.
#include "models/inputs/inputs.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string p = ternion::fuzz::as_file(data, size, ".npy");
    for (auto layout : {ternion::Layout::samples_first, ternion::Layout::time_first})
        ternion::fuzz::expect_clean([&] {
            ternion::InputOptions o;
            o.layout = layout;
            o.max_memory = std::uint64_t{256} << 20;
            ternion::open_input(p, o);
        });
    return 0;
}
