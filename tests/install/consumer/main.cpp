// Consumer of an installed ternion: runs the bundled BSA Transformer through the C++ API and
// prints its accuracy and energy per inference (compared with the installed CLI's by
// tests/install/test_install.sh).
#include <cstdio>
#include <cstdlib>
#include <ternion/hw/cost_model.hpp>
#include <ternion/models/inputs.hpp>
#include <ternion/models/nir_loader.hpp>
#include <ternion/sim/engine.hpp>
#include <ternion/sim/error.hpp>
#include <ternion/sim/layer_record.hpp>

int main() try {
    using namespace ternion;
    // An executable outside the prefix finds the data through TERNION_DATA_DIR.
    ::setenv("TERNION_DATA_DIR", CONSUMER_DATA_DIR, 0);
    const std::string model = bundled_path("bsa_digits.h5");
    LoadReport report;
    auto graph = load_model(model, UserLoadOptions{}, report);
    InputOptions io;
    io.timesteps = 4;  // the bundled model's /node/metadata/timesteps
    auto src = open_input(bundled_path("digits_test.h5"), io);
    RunConfig cfg;
    cfg.timesteps = 4;
    RunResult res = run(*graph, *src, cfg);
    std::int64_t correct = 0;
    for (std::int64_t k = 0; k < res.samples; ++k)
        correct += res.predictions[static_cast<std::size_t>(k)] ==
                   src->labels()[static_cast<std::size_t>(k)];
    hw::CostReport cost = hw::price(make_run_record(*graph, res),
                                    hw::load_profile(hw::kDefaultProfile), hw::PriceOptions{});
    std::printf("model %s\n", model.c_str());
    std::printf("accuracy %.17g\n",
                static_cast<double>(correct) / static_cast<double>(res.samples));
    std::printf("energy_pj_per_inference %.17g\n", cost.per_inference_pj);
    return 0;
} catch (const ternion::Error& e) {
    std::fprintf(stderr, "consumer: error: %s\n", e.what());
    return 1;
}
