// libFuzzer harness: the input reader (open_input: /spikes, /data, /labels) on arbitrary bytes.
#include "models/inputs/inputs.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string p = ternion::fuzz::as_file(data, size, ".h5");
    ternion::fuzz::expect_clean_vetted(p, [&] {
        ternion::InputOptions o;
        o.encoding = ternion::Encoding::latency;  // the path that reads every analog value
        o.timesteps = 4;
        ternion::open_input(p, o);
    });
    return 0;
}
