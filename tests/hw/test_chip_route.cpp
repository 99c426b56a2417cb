// Routing on a mesh (hw/chip/route.cpp) against hand-worked packets: SANA-FE's rule (hops
// |dx| + |dy|, energy of the destination tile, latency of the source tile; chip-model.md D.4),
// with tiles whose figures differ so that the rule shows; and SRAM energy by size against
// chip-model.md E.5's worked values. The shipped loihi-like file is read for D.4's example.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "hw/chip/chip.hpp"

using namespace ternion::chip;

namespace {

// Loihi's Table 2 figures on every tile of a W x H mesh, one core per tile.
Mesh loihi(std::int64_t w, std::int64_t h) {
    MeshSpec s;
    s.width = w, s.height = h, s.cores_per_tile = 1;
    s.spike_pj = 1.7, s.spike_ns = 2.1;
    s.hop_pj_ew = 3.0, s.hop_pj_ns = 4.0, s.hop_ns_ew = 4.1, s.hop_ns_ns = 6.5;
    return Mesh::uniform(s);
}

}  // namespace

TEST_CASE("one spike from tile (0,0) to (3,2): 3 E-W and 2 N-S hops (chip-model.md D.4)") {
    const RouteTotals r = route(loihi(4, 4), {Flow{0, {11}, 1}}, 16);
    CHECK(r.packets == 1);
    CHECK(r.hops == 5);
    // 1.7 + 3 x 3.0 + 2 x 4.0 = 18.7 pJ; 2.1 + 3 x 4.1 + 2 x 6.5 = 27.4 ns.
    CHECK(r.energy_pj == doctest::Approx(18.7));
    CHECK(r.core_flight_ns[0] == doctest::Approx(27.4));
    CHECK(r.core_packets[0] == 1);
}

TEST_CASE("the shipped loihi-like chip routes D.4's spike the same way") {
    const Chip c = load_chip("loihi-like");
    REQUIRE(c.family == "mesh");
    CHECK(c.mesh.cores() == 128);
    CHECK(c.mesh.neurons == 1024);
    CHECK(c.mesh.max_fanin == 4096);
    CHECK(c.mesh.synaptic_op_pj == 23.6);
    CHECK(c.mesh.neuron_update_pj == 52);
    CHECK(c.mesh.neuron_active_pj == 81);
    const Mesh m = Mesh::uniform(c.mesh);
    // Core 4 x 11 = 44 sits on tile 11 = (3, 1); core 0 on (0, 0): 3 E-W and 1 N-S hops.
    const RouteTotals r = route(m, {Flow{0, {44}, 2}}, c.mesh.cores());
    CHECK(r.hops == 2 * 4);
    CHECK(r.energy_pj == doctest::Approx(2 * (1.7 + 3 * 3.0 + 1 * 4.0)));
    CHECK(r.core_flight_ns[0] == doctest::Approx(2.1 + 3 * 4.1 + 1 * 6.5));
}

TEST_CASE("hop energy of the destination tile, latency of the source tile") {
    Mesh m = loihi(2, 2);
    // Tile 3 = (1, 1) is a costly destination; tile 0 = (0, 0) a slow source.
    m.pj_ew[3] = 10, m.pj_ns[3] = 20;
    m.ns_ew[0] = 100, m.ns_ns[0] = 200;
    const RouteTotals a = route(m, {Flow{0, {3}, 1}}, 4);
    CHECK(a.energy_pj == doctest::Approx(1.7 + 10 + 20));
    CHECK(a.core_flight_ns[0] == doctest::Approx(2.1 + 100 + 200));
    // The other way round: tile 0's energies (3, 4) and tile 3's latencies (4.1, 6.5).
    const RouteTotals b = route(m, {Flow{3, {0}, 1}}, 4);
    CHECK(b.energy_pj == doctest::Approx(1.7 + 3 + 4));
    CHECK(b.core_flight_ns[3] == doctest::Approx(2.1 + 4.1 + 6.5));
}

TEST_CASE("a spike is a packet to every destination core; flights take the longest") {
    // 2 x 2 tiles of 2 cores: core k on tile k / 2. From core 1 (tile (0,0)) to cores 0 (same
    // tile), 3 (tile (1,0)) and 7 (tile (1,1)): hops 0 + 1 + 2; 2.5 spikes.
    Mesh m = loihi(2, 2);
    m.cores_per_tile = 2;
    const RouteTotals r = route(m, {Flow{1, {0, 3, 7}, 2.5}}, 8);
    CHECK(r.packets == doctest::Approx(7.5));
    CHECK(r.hops == doctest::Approx(2.5 * 3));
    CHECK(r.energy_pj == doctest::Approx(2.5 * (3 * 1.7 + 3.0 + (3.0 + 4.0))));
    CHECK(r.core_flight_ns[1] == doctest::Approx(2.1 + 4.1 + 6.5));
    // The host injects at tile (0, 0) and is no core's work.
    const RouteTotals h = route(m, {Flow{-1, {6}, 4}}, 8);
    CHECK(h.host_pj == doctest::Approx(4 * (1.7 + 3.0 + 4.0)));
    CHECK(h.core_packets[6] == 0);
}

TEST_CASE("packets per link on a 2 x 2 mesh: x first, then y; the links sum to the hops") {
    // 2 x 2 tiles of 2 cores, tile t at (t % 2, t / 2). Core 1 (tile 0) to cores 0 (its own
    // tile), 3 (tile 1) and 7 (tile 3): tile 0 -> 1 twice, then 1 -> 3; core 6 (tile 3) to core
    // 0: 3 -> 2 along x first, then 2 -> 0 (y first would take 3 -> 1 -> 0); the host (tile 0)
    // to core 5 (tile 2): 0 -> 2.
    Mesh m = loihi(2, 2);
    m.cores_per_tile = 2;
    const RouteTotals r = route(m, {Flow{1, {0, 3, 7}, 2.5}, Flow{6, {0}, 1}, Flow{-1, {5}, 4}}, 8);
    REQUIRE(r.link_packets.size() == 16);
    auto link = [&](std::int64_t tile, int dir) {
        return r.link_packets[static_cast<std::size_t>(link_index(tile, dir))];
    };
    CHECK(link(0, kPlusX) == doctest::Approx(5));
    CHECK(link(1, kPlusY) == doctest::Approx(2.5));
    CHECK(link(3, kMinusX) == doctest::Approx(1));
    CHECK(link(2, kMinusY) == doctest::Approx(1));
    CHECK(link(0, kPlusY) == doctest::Approx(4));
    CHECK(link(3, kMinusY) == 0);
    CHECK(link(1, kMinusX) == 0);
    double sum = 0;
    for (double v : r.link_packets) sum += v;
    CHECK(r.hops == doctest::Approx(2.5 * 3 + 2 + 4));
    CHECK(sum == doctest::Approx(r.hops));
    CHECK(r.host_packets == 4);
}

TEST_CASE("packets per link, every pair of tiles of a 2 x 2 mesh, against a count by position") {
    // One flow per (source tile, destination tile) with a weight of its own. Counted again
    // without walking: a packet crosses the x link leaving (x, y) when it starts on row y and x
    // lies between its source's x and its destination's (the side it heads to), and the y link
    // leaving (x, y) when x is its destination's column and y lies between the two rows.
    const Mesh m = loihi(2, 2);
    std::vector<Flow> flows;
    std::vector<double> want(16, 0);
    for (std::int64_t s = 0; s < 4; ++s)
        for (std::int64_t d = 0; d < 4; ++d) {
            const double w = 1 + static_cast<double>(s * 4 + d);
            flows.push_back({s, {d}, w});
            const std::int64_t sx = s % 2, sy = s / 2, dx = d % 2, dy = d / 2;
            for (std::int64_t x = 0; x < 2; ++x)
                for (std::int64_t y = 0; y < 2; ++y) {
                    const std::int64_t t = y * 2 + x;
                    if (y == sy && sx <= x && x < dx) want[static_cast<std::size_t>(t * 4)] += w;
                    if (y == sy && dx < x && x <= sx)
                        want[static_cast<std::size_t>(t * 4 + 1)] += w;
                    if (x == dx && sy <= y && y < dy)
                        want[static_cast<std::size_t>(t * 4 + 2)] += w;
                    if (x == dx && dy < y && y <= sy)
                        want[static_cast<std::size_t>(t * 4 + 3)] += w;
                }
        }
    const RouteTotals r = route(m, flows, 4);
    double sum = 0;
    for (std::size_t i = 0; i < 16; ++i) {
        CHECK(r.link_packets[i] == doctest::Approx(want[i]));
        sum += r.link_packets[i];
    }
    CHECK(sum == doctest::Approx(r.hops));
}

TEST_CASE("SRAM energy by size: Horowitz's table, linear between sizes (chip-model.md E.5)") {
    MeshSpec s;
    s.sram_pj = {{8192, 10}, {32768, 20}, {1048576, 100}};
    // E.5: 3.75 pJ/B at 20 KiB, 1.5625 pJ/B at 5120 B, 25 pJ/B above 1 MiB, Lemaire's per-byte
    // cost being the 64-bit figure over a 4-byte width: x 4 gives the pJ per access.
    CHECK(sram_pj(s, 20480) == doctest::Approx(3.75 * 4));
    CHECK(sram_pj(s, 5120) == doctest::Approx(1.5625 * 4));
    CHECK(sram_pj(s, 4 << 20) == doctest::Approx(25 * 4));
    CHECK(sram_pj(s, 32768) == doctest::Approx(20));
}

TEST_CASE("the ANN equivalent's figures of the shipped mesh chips") {
    // generic-45nm: Horowitz's int8 multiply (0.2 pJ) and int32 add (0.1 pJ) per MAC; the
    // requantisation of an output an int32 multiply and add (3.1 + 0.1 pJ).
    const Chip g = load_chip("generic-45nm");
    CHECK(g.mesh.ann_mac_pj == doctest::Approx(0.2 + 0.1));
    CHECK(g.mesh.ann_activation_pj == doctest::Approx(3.1 + 0.1));
    CHECK(g.mesh.ann_activation_bits == 8);
    // loihi-like has no MAC unit: a MAC is priced as one synaptic op and an output as one
    // inactive neuron update, and the file says so (assumed).
    const Chip l = load_chip("loihi-like");
    CHECK(l.mesh.ann_mac_pj == l.mesh.synaptic_op_pj);
    CHECK(l.mesh.ann_mac_ns == l.mesh.synaptic_op_ns);
    CHECK(l.mesh.ann_activation_pj == l.mesh.neuron_update_pj);
    const auto& a = l.mesh.assumed;
    CHECK(std::find(a.begin(), a.end(), "ann.mac_pj") != a.end());
    CHECK(l.mesh.sources.count("ann") == 1);
}

namespace {

// One attention node (N = 4 tokens, D = 4, H = 2 heads, dh = 2) on a 2 x 1 mesh: core 0 holds
// its 48 Q, K and V neurons, core 1 its 8 score rows and 16 output neurons; the input feeds it.
MeshPlacement attention_on_two_cores(ternion::AttentionClosedForm form, bool spiking_v) {
    MeshPlacement p;
    MeshLayer l;
    l.name = "attn", l.kind = "attention", l.nodes = {"attn"}, l.sources = {-1};
    l.shape.tokens = 4, l.shape.dim = 4, l.shape.heads = 2, l.shape.dim_in = 4;
    l.shape.closed_form = form, l.shape.spiking_v = spiking_v;
    l.qkv_neurons = 48, l.score_entries = 32, l.neurons = 64, l.out_neurons = 16;
    l.cores = {CoreUse{0, 48, 0, 0, 0, 0, 0, 0, 0, 0}, CoreUse{1, 16, 16, 0, 0, 0, 0, 0, 0, 8}};
    l.att_routes = attention_routes(l);  // every score row on core 1: Q, K and V all go there
    p.layers = {l};
    p.cores_used = 2, p.tiles_used = 2, p.input_neurons = 16;
    return p;
}

MeshSpec two_tiles() {
    MeshSpec s;
    s.width = 2, s.height = 1, s.cores_per_tile = 1, s.neurons = 1024;
    s.spike_pj = 1.7, s.spike_ns = 2.1, s.hop_pj_ew = 3.0, s.hop_pj_ns = 4.0;
    s.hop_ns_ew = 4.1, s.hop_ns_ns = 6.5;
    s.state_bits = 16, s.state_memory_bytes = 8192, s.access_bits = 64, s.sram_pj = {{8192, 10}};
    s.add_pj = 1, s.shift_pj = 10, s.cmp_pj = 100, s.add_ns = 1, s.shift_ns = 2, s.cmp_ns = 3;
    return s;
}

MapOptions at_half() {
    MapOptions o;
    o.has_rates = true;
    o.rates.input = o.rates.hidden = o.rates.output = 0.5;
    return o;
}

}  // namespace

TEST_CASE("attention on a mesh: SSA's closed form at rate r, its score buffer and Q/K/V traffic") {
    MeshPlacement p = attention_on_two_cores(ternion::AttentionClosedForm::qkv_products, true);
    estimate_mesh(two_tiles(), at_half(), p);
    const MeshLayer::Att& a = p.layers[0].att;
    // H N^2 dh r^2 = 2 x 16 x 2 x 0.25 = 16 score adds; a score is non-zero with probability
    // z = 1 - (1 - r^2)^dh = 0.4375 and then adds dh r = 1 V spike: 2 x 16 x 0.4375 x 2 x 0.5 = 14.
    CHECK(a.adds == doctest::Approx(30));
    CHECK(a.shifts == 0);
    CHECK(a.cmps == 0);
    CHECK(a.band.ops == doctest::Approx(30));
    // H N^2 = 32 entries written and read, 16 bits each: 32 x 2 x 16 / 64 = 16 words at 10 pJ.
    CHECK(a.entries == 32);
    CHECK(a.band.memory == doctest::Approx(160));
    // Q, K, V: 3 x 16 x 0.5 = 24 spikes, core 0 -> core 1, one hop each; the 16 mixed values stay
    // on core 1 (no hop).
    CHECK(a.packets == doctest::Approx(24 + 16));
    CHECK(a.hops == doctest::Approx(24));
    CHECK(a.band.routing == doctest::Approx(24 * (1.7 + 3.0) + 16 * 1.7));
    // Core 1 does the 30 adds at 1 ns (neuron times are 0 here), then sends 16 packets (0 hops).
    CHECK(p.core_ns[1] == doctest::Approx(30 * 1 + 16 * 2.1));
    // The ANN: the node's dense score MACs are its own (none set here); its internal values at
    // rate 1: 48 to core 1, 16 kept there.
    CHECK(p.layers[0].ann.att_packets == doctest::Approx(48 + 16));
}

TEST_CASE("attention on a mesh: BSA's ternary scores, Shiftmax and analog V at rate r") {
    MeshPlacement p = attention_on_two_cores(ternion::AttentionClosedForm::ternary_shiftmax, false);
    estimate_mesh(two_tiles(), at_half(), p);
    const MeshLayer::Att& a = p.layers[0].att;
    // Scores H N^2 dh r^2 = 16; Shiftmax 2 H N^2 = 64 adds, H N^2 = 32 shifts and 32 compares;
    // shift-and-add with V: H N^2 dh = 64 shifts and 64 adds.
    CHECK(a.adds == doctest::Approx(16 + 64 + 64));
    CHECK(a.shifts == doctest::Approx(32 + 64));
    CHECK(a.cmps == doctest::Approx(32));
    CHECK(a.band.ops == doctest::Approx(144 * 1 + 96 * 10 + 32 * 100));
    // V is analog: all 16 values are sent every step, with 8 Q and 8 K spikes.
    CHECK(a.packets == doctest::Approx(8 + 8 + 16 + 16));
    CHECK(a.band.routing == doctest::Approx(32 * (1.7 + 3.0) + 16 * 1.7));
    CHECK(p.core_ns[1] == doctest::Approx(144 * 1 + 96 * 2 + 32 * 3 + 16 * 2.1));
}
