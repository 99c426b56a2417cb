// Consumer of an installed ternion: runs the bundled BSA Transformer through the C++ API (the
// run pipeline), once from the files and once from arrays in memory, and prints its accuracy
// and energy per inference (compared with the installed CLI's by tests/install/test_install.sh).
// Headers are included as "sim/...": the form that works both installed and through
// add_subdirectory (an installed prefix also offers <ternion/sim/...>).
#include <cstdio>
#include <cstdlib>
#include "models/pipeline.hpp"
#include "sim/core/error.hpp"
#include "sim/io/h5io.hpp"

int main() try {
    using namespace ternion;
    // An executable outside the prefix finds the data through TERNION_DATA_DIR.
    ::setenv("TERNION_DATA_DIR", CONSUMER_DATA_DIR, 0);
    RunRequest q;
    q.model = bundled_path("bsa_digits.h5");
    q.input = bundled_path("digits_test.h5");
    const RunReport files = Pipeline(q).run();

    // The same test set handed over as arrays.
    h5::Reader in(q.input);
    h5::DatasetInfo info;
    auto data = std::make_shared<std::vector<float>>(in.read_floats("/data", &info));
    ArrayInput a;
    a.dims = info.dims;
    a.data = data->data();
    a.owner = data;
    a.labels = in.read_ints("/labels");
    q.input.clear();
    q.arrays = a;
    const RunReport arrays = Pipeline(q).run();
    if (arrays.result.predictions != files.result.predictions ||
        arrays.cost.per_inference_pj != files.cost.per_inference_pj) {
        std::fprintf(stderr, "consumer: arrays and files disagree\n");
        return 1;
    }
    std::printf("model %s\n", files.model.c_str());
    std::printf("accuracy %.17g\n", *files.accuracy);
    std::printf("energy_pj_per_inference %.17g\n", files.cost.per_inference_pj);
    return 0;
} catch (const ternion::Error& e) {
    std::fprintf(stderr, "consumer: error: %s\n", e.what());
    return 1;
}
