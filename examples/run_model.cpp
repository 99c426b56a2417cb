// Embedding ternion: load a model, run it on an input file, price it under a hardware profile.
// usage: run_model [MODEL INPUT [PROFILE]]   (default: the bundled BSA Transformer and digits)
#include <cstdio>

#include "hw/cost_model.hpp"
#include "models/inputs.hpp"
#include "models/nir_loader.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/h5io.hpp"
#include "sim/layer_record.hpp"

int main(int argc, char** argv) try {
    using namespace ternion;
    const std::string model = argc > 2 ? argv[1] : bundled_path("bsa_digits.h5");
    const std::string input = argc > 2 ? argv[2] : bundled_path("digits_test.h5");
    const hw::Profile profile = hw::load_profile(argc > 3 ? argv[3] : hw::kDefaultProfile);

    LoadReport report;
    auto graph = load_model(model, UserLoadOptions{}, report);
    RunConfig cfg;  // event engine, 1 thread
    // The number of steps the model was trained with, when its file says (else the input's).
    if (h5::Reader r(model); r.is_dataset("/node/metadata/timesteps"))
        cfg.timesteps = static_cast<std::int64_t>(r.read_scalar("/node/metadata/timesteps"));
    InputOptions io;  // direct encoding
    io.timesteps = cfg.timesteps;
    auto src = open_input(input, io);

    RunResult res = run(*graph, *src, cfg);
    std::int64_t correct = 0;
    for (std::int64_t k = 0; k < res.samples && !src->labels().empty(); ++k)
        correct += res.predictions[static_cast<std::size_t>(k)] ==
                   src->labels()[static_cast<std::size_t>(k)];
    hw::CostReport cost = hw::price(make_run_record(*graph, res), profile, hw::PriceOptions{});

    std::printf("model %s: %lld samples x %lld steps\n", model.c_str(),
                static_cast<long long>(res.samples), static_cast<long long>(res.timesteps));
    std::printf("accuracy %.17g\n",
                static_cast<double>(correct) / static_cast<double>(res.samples));
    std::printf("energy_pj_per_inference %.17g (ANN equivalent %.17g) under %s\n",
                cost.per_inference_pj, cost.ann_pj_per_inference, cost.profile_name.c_str());
    return 0;
} catch (const ternion::Error& e) {
    std::fprintf(stderr, "run_model: error: %s\n", e.what());
    return 1;
}
