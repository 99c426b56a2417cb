// libFuzzer harness: the hardware profile parser (load_profile on a .json file).
#include "hw/cost_model.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string p = ternion::fuzz::as_file(data, size, ".json");
    ternion::fuzz::expect_clean([&] { ternion::hw::load_profile(p); });
    return 0;
}
