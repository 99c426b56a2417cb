// Per-synapse spike targets on a mesh (hw/chip/targets.cpp, docs/chips.md "Routing") against
// hand-worked convolutions whose output positions and channels are split across cores: which
// cores a spike at each input position reaches, and the packets, hops and energy of the input's
// spikes by XY routing. The expected sets are written out by hand and recounted here from the
// convolution's definition (output (oy, ox) reads input (oy s - p + ky d, ox s - p + kx d)), not
// by the helpers the placement uses.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <vector>

#include "hw/chip/chip.hpp"
#include "models/pipeline.hpp"
#include "tests/support/model_file.hpp"

using namespace ternion;
using namespace ternion::chip;
using ternion::test::ModelFile;
using ternion::test::P;
using ternion::test::TempFile;

namespace {

// loihi-like's figures on a w x h mesh of one core per tile, `neurons` per core, memories and
// axons that never bind: layers split by neurons alone.
Chip small_mesh(std::int64_t w, std::int64_t h, std::int64_t neurons) {
    Chip c = load_chip("loihi-like");
    c.mesh.width = w, c.mesh.height = h, c.mesh.cores_per_tile = 1, c.mesh.neurons = neurons;
    c.mesh.synapse_memory_bytes = c.mesh.state_memory_bytes = 1 << 20;
    c.mesh.max_fanin = c.mesh.max_fanout = 1 << 20;
    return c;
}

// Input [cin, hw, hw] -> Conv2d -> LIF -> Output, weights all 1.
std::shared_ptr<const LoadedModel> conv_model(const TempFile& f, double cin, double cout, double hw,
                                              double groups, double stride, double pad,
                                              double dil) {
    const auto n = static_cast<std::size_t>(cout * cin / groups * 9);
    ModelFile()
        .node("input", "Input", {{"shape", P({cin, hw, hw})}})
        .node("conv", "Conv2d",
              {{"weight",
                P(std::vector<double>(n, 1.0), {static_cast<std::int64_t>(cout),
                                                static_cast<std::int64_t>(cin / groups), 3, 3})},
               {"groups", P(groups)},
               {"stride", P(stride)},
               {"padding", P(pad)},
               {"dilation", P(dil)}})
        .node("lif", "IF", {{"r", P(1.0)}, {"v_threshold", P(0.5)}})
        .node("output", "Output")
        .chain({"input", "conv", "lif", "output"})
        .write(f.path());
    return load_model_file(f.path(), {});
}

// The destination cores of input element e (host-injected).
std::set<std::int64_t> cores_of_input(const MeshPlacement& m, std::int64_t e) {
    const SourceRoutes& r = m.input_targets.at(0);
    const RouteGroup& g =
        r.groups.at(static_cast<std::size_t>(r.group.at(static_cast<std::size_t>(e))));
    CHECK(g.src == -1);
    return {g.dst.begin(), g.dst.end()};
}

// Every input element's cores, recounted from the convolution's definition: output unit
// (position, channel) = position x cout + channel on core unit / per_core.
std::vector<std::set<std::int64_t>> by_definition(std::int64_t cin, std::int64_t cout,
                                                  std::int64_t hw, std::int64_t groups,
                                                  std::int64_t s, std::int64_t p, std::int64_t d,
                                                  std::int64_t per_core) {
    const std::int64_t ohw = (hw + 2 * p - d * 2 - 1) / s + 1;
    std::vector<std::set<std::int64_t>> want(static_cast<std::size_t>(cin * hw * hw));
    for (std::int64_t oc = 0; oc < cout; ++oc)
        for (std::int64_t oy = 0; oy < ohw; ++oy)
            for (std::int64_t ox = 0; ox < ohw; ++ox)
                for (std::int64_t ky = 0; ky < 3; ++ky)
                    for (std::int64_t kx = 0; kx < 3; ++kx) {
                        const std::int64_t iy = oy * s - p + ky * d, ix = ox * s - p + kx * d;
                        if (iy < 0 || iy >= hw || ix < 0 || ix >= hw) continue;
                        const std::int64_t g = oc / (cout / groups), per = cin / groups;
                        for (std::int64_t ic = g * per; ic < (g + 1) * per; ++ic)
                            want[static_cast<std::size_t>((ic * hw + iy) * hw + ix)].insert(
                                ((oy * ohw + ox) * cout + oc) / per_core);
                    }
    return want;
}

}  // namespace

TEST_CASE(
    "a 3x3 convolution split by rows of positions: each input spike reaches its window's cores") {
    TempFile f;
    const auto m = conv_model(f, 1, 2, 4, 1, 1, 1, 1);
    // 6 neurons a core: 3 positions of 2 channels; 16 positions on cores 0..5 (pos / 3).
    const Placement p = map_model(*m->graph, small_mesh(3, 2, 6));
    const MeshPlacement& mp = p.mesh;
    REQUIRE(mp.layers.size() == 1);
    REQUIRE(mp.layers[0].cores.size() == 6);
    // By hand: input (0,0) feeds outputs (0..1, 0..1) = positions 0, 1, 4, 5: cores 0 and 1;
    // (1,1) feeds rows 0..2, columns 0..2: positions 0-2, 4-6, 8-10: cores 0..3; (3,3) feeds
    // 10, 11, 14, 15: cores 3, 4, 5; (2,0) feeds 4, 5, 8, 9, 12, 13: cores 1..4.
    CHECK(cores_of_input(mp, 0) == std::set<std::int64_t>{0, 1});
    CHECK(cores_of_input(mp, 5) == std::set<std::int64_t>{0, 1, 2, 3});
    CHECK(cores_of_input(mp, 15) == std::set<std::int64_t>{3, 4, 5});
    CHECK(cores_of_input(mp, 8) == std::set<std::int64_t>{1, 2, 3, 4});
    const auto want = by_definition(1, 2, 4, 1, 1, 1, 1, 6);
    // XY hops from the host's tile (0, 0) to core k on tile (k % 3, k / 3); energy 1.7 pJ a
    // packet, 3.0 pJ east-west and 4.0 pJ north-south a hop (every rate 1: one spike each).
    double packets = 0, hops = 0, pj = 0;
    for (std::int64_t e = 0; e < 16; ++e) {
        CHECK(cores_of_input(mp, e) == want[static_cast<std::size_t>(e)]);
        for (std::int64_t k : want[static_cast<std::size_t>(e)])
            packets += 1, hops += static_cast<double>(k % 3 + k / 3),
                pj += 1.7 + 3.0 * static_cast<double>(k % 3) + 4.0 * static_cast<double>(k / 3);
    }
    // 4 corners reach 2 or 3 cores, ... : 56 packets in all (against 16 x 6 = 96 were every
    // spike sent to every core of the layer).
    CHECK(packets == 56);
    CHECK(mp.routing.host_packets == doctest::Approx(packets));
    CHECK(mp.routing.hops == doctest::Approx(hops));  // the LIF feeds only the Output
    CHECK(mp.routing.host_pj == doctest::Approx(pj));
    for (const RouteGroup& g : mp.layers[0].targets.groups) CHECK(g.dst.empty());
}

TEST_CASE(
    "a grouped convolution with stride 2, padding 2 and dilation 2, channels split across cores") {
    TempFile f;
    const auto m = conv_model(f, 2, 4, 5, 2, 2, 2, 2);
    // Output [4, 3, 3]: 36 units (position x 4 + channel), 3 a core: cores 0..11.
    const Placement p = map_model(*m->graph, small_mesh(4, 3, 3));
    const MeshPlacement& mp = p.mesh;
    REQUIRE(mp.layers[0].cores.size() == 12);
    // By hand. Input channel 0 (group 0: output channels 0, 1) at (0, 0): oy 2 - 2 + 2 ky = 0
    // gives oy 1 (ky 0) and 0 (ky 1), likewise ox: positions 0, 1, 3, 4, units
    // {0, 1, 4, 5, 12, 13, 16, 17}: cores 0, 1, 4, 5. Channel 1 (output channels 2, 3) at (0, 0):
    // units {2, 3, 6, 7, 14, 15, 18, 19}: cores 0, 1, 2, 4, 5, 6. Odd rows reach no tap.
    // Channel 0 at (4, 4): oy 2 (ky 1) and 1 (ky 2): positions 4, 5, 7, 8, units
    // {16, 17, 20, 21, 28, 29, 32, 33}: cores 5, 6, 7, 9, 10, 11.
    CHECK(cores_of_input(mp, 0) == std::set<std::int64_t>{0, 1, 4, 5});
    CHECK(cores_of_input(mp, 25) == std::set<std::int64_t>{0, 1, 2, 4, 5, 6});
    CHECK(cores_of_input(mp, 5).empty());  // channel 0, row 1
    CHECK(cores_of_input(mp, 24) == std::set<std::int64_t>{5, 6, 7, 9, 10, 11});
    const auto want = by_definition(2, 4, 5, 2, 2, 2, 2, 3);
    double packets = 0, hops = 0;
    for (std::int64_t e = 0; e < 50; ++e) {
        CHECK(cores_of_input(mp, e) == want[static_cast<std::size_t>(e)]);
        for (std::int64_t k : want[static_cast<std::size_t>(e)])
            packets += 1, hops += static_cast<double>(k % 4 + k / 4);
    }
    CHECK(mp.routing.host_packets == doctest::Approx(packets));
    CHECK(mp.routing.hops == doctest::Approx(hops));
    // Every link's packets sum to the hops (the walk is the report's).
    double links = 0;
    for (double v : mp.routing.link_packets) links += v;
    CHECK(links == doctest::Approx(hops));
}

TEST_CASE("measured per-element spikes weigh the route groups; counts of part of a run do not") {
    TempFile f;
    const auto m = conv_model(f, 1, 2, 4, 1, 1, 1, 1);
    const Chip c = small_mesh(3, 2, 6);
    MapOptions o;
    o.measured = o.has_rates = true;
    o.sample_steps = 2;
    // Input (0, 0) fired 3 times and (3, 3) once over 2 sample-steps; the LIF never.
    std::vector<std::uint64_t> in(16, 0);
    in[0] = 3, in[15] = 1;
    o.element_spikes["input"] = in;
    o.activity["input"].nonzero_out = 4;
    o.activity["input"].rate_out = 4.0 / 2 / 16;
    o.activity["lif"].nonzero_out = 0;
    o.rates.input = 4.0 / 2 / 16;
    const Placement p = map_model(*m->graph, c, o);
    // (0,0) to cores {0, 1}: 0 + 1 hops; (3,3) to {3, 4, 5}: 1 + 2 + 3 hops; per sample-step.
    CHECK(p.mesh.routing.host_packets == doctest::Approx((3 * 2 + 1 * 3) / 2.0));
    CHECK(p.mesh.routing.hops == doctest::Approx((3 * 1 + 1 * 6) / 2.0));
    // Counts that do not add up to the run's total (a rank's share) spread the rate evenly.
    o.activity["input"].nonzero_out = 8;
    const Placement q = map_model(*m->graph, c, o);
    CHECK(q.mesh.routing.host_packets == doctest::Approx(4.0 / 2 / 16 * 56));
}
