// Embedding ternion: run a model on an input file through the run pipeline (the same one
// `ternion run` uses), price it under a hardware profile, and read spikes back from memory.
// usage: run_model [MODEL INPUT [PROFILE]]   (default: the bundled BSA Transformer and digits)
#include <cstdio>

#include "models/pipeline.hpp"
#include "sim/core/error.hpp"

int main(int argc, char** argv) try {
    using namespace ternion;
    RunRequest q;
    q.model = argc > 2 ? argv[1] : bundled_path("bsa_digits.h5");
    q.input = argc > 2 ? argv[2] : bundled_path("digits_test.h5");
    if (argc > 3) q.profile = argv[3];
    q.record = TraceOptions{};  // keep every spiking node's spikes in memory
    q.record->spike_format = SpikeFormat::grid;

    Pipeline pipeline(q);  // loads and checks everything before simulating
    const RunReport r = pipeline.run();

    std::printf("model %s: %lld samples x %lld steps\n", r.model.c_str(),
                static_cast<long long>(r.result.samples), static_cast<long long>(r.timesteps));
    if (r.accuracy) std::printf("accuracy %.17g\n", *r.accuracy);
    std::printf("energy_pj_per_inference %.17g (ANN equivalent %.17g) under %s\n",
                r.cost.per_inference_pj, r.cost.ann_pj_per_inference, r.cost.profile_name.c_str());
    // The first spiking node's spikes of sample 0 at step 0, from the recording.
    for (const auto& name : pipeline.recorder()->recorded_nodes()) {
        const auto* grid = pipeline.recorder()->spike_grid(name);
        if (!grid) continue;
        std::int64_t n = 0;
        for (std::int64_t i = 0; i < pipeline.recorder()->width(name); ++i) n += (*grid)[i] != 0;
        std::printf("%s: %lld of %lld neurons spiked at sample 0, step 0\n", name.c_str(),
                    static_cast<long long>(n),
                    static_cast<long long>(pipeline.recorder()->width(name)));
        break;
    }
    return 0;
} catch (const ternion::Error& e) {
    std::fprintf(stderr, "run_model: error: %s\n", e.what());
    return 1;
}
