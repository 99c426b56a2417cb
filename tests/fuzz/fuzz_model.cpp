// libFuzzer harness: the NIR model loader (load_model) on arbitrary bytes as an HDF5 file.
#include "models/nir_loader.hpp"
#include "tests/fuzz/fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string p = ternion::fuzz::as_file(data, size, ".h5");
    ternion::fuzz::expect_clean_vetted(p, [&] {
        ternion::LoadReport rep;
        ternion::load_model(p, {}, rep);
    });
    return 0;
}
