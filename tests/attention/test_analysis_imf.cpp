// Inter-modality flow and the trace reader: its definition's worked facts (docs/analysis.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>

#include "attention/analysis/analysis_imf.hpp"
#include "attention/analysis/analysis_trace.hpp"
#include "sim/core/error.hpp"
#include "sim/io/h5io.hpp"

using namespace ternion::analysis;

namespace {

std::vector<float> uniform(std::int64_t n) {
    return std::vector<float>(static_cast<std::size_t>(n * n), 1.0f / float(n));
}

}  // namespace

TEST_CASE("groups: parsing and bad input") {
    const auto g = parse_groups("image:0-3+8,text:4-7", 10);
    REQUIRE(g.size() == 2);
    CHECK(g[0].name == "image");
    CHECK(g[0].tokens == std::vector<std::int64_t>{0, 1, 2, 3, 8});
    CHECK(g[1].tokens == std::vector<std::int64_t>{4, 5, 6, 7});
    CHECK_THROWS_AS(parse_groups("image:0-3", 10), ternion::OptionError);     // one group
    CHECK_THROWS_AS(parse_groups("a:0-3,b:3-5", 10), ternion::OptionError);   // overlap
    CHECK_THROWS_AS(parse_groups("a:0-3,b:4-10", 10), ternion::OptionError);  // out of range
    CHECK_THROWS_AS(parse_groups("a:0-3,b", 10), ternion::OptionError);       // no range
    CHECK_THROWS_AS(parse_groups("a:3-1,b:4", 10), ternion::OptionError);     // empty range
    CHECK_THROWS_AS(parse_groups("a:x,b:4", 10), ternion::OptionError);       // not a number
    CHECK_THROWS_AS(parse_groups("a:0,a:4", 10), ternion::OptionError);       // repeated
}

TEST_CASE("facts 1-3: block-diagonal gives 0, fully cross-modal gives 1") {
    const std::int64_t N = 6;
    const auto g = parse_groups("v:0-2,t:3-5", N);
    std::vector<float> block(N * N, 0.f), cross(N * N, 0.f);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            const bool same = (i < 3) == (j < 3);
            (same ? block : cross)[size_t(i * N + j)] = 1.0f / 3;
        }
    CHECK(inter_modality_flow(block.data(), N, N, g).imf == 0.0);
    CHECK(inter_modality_flow(cross.data(), N, N, g).imf == doctest::Approx(1.0).epsilon(1e-12));
    // Ternary maps: negative entries count with their magnitude, IMF stays in [0, 1].
    std::vector<float> signed_map(N * N, 0.f);
    signed_map[0 * N + 4] = -2;
    signed_map[1 * N + 1] = 1;
    signed_map[4 * N + 5] = -1;
    const auto f = inter_modality_flow(signed_map.data(), N, N, g);
    CHECK(f.imf == doctest::Approx(0.5));
    CHECK(f.mass == doctest::Approx(4.0));
    std::vector<float> zero(N * N, 0.f);
    CHECK(std::isnan(inter_modality_flow(zero.data(), N, N, g).imf));
}

TEST_CASE("facts 4 and 6: uniform attention gives 2|V||T|/N^2; row-stochastic mass is N") {
    const std::int64_t N = 184;
    const auto g = parse_groups("image:0-143,text:144-183", N);
    const auto A = uniform(N);
    const auto f = inter_modality_flow(A.data(), N, N, g);
    CHECK(f.imf == doctest::Approx(2.0 * 144 * 40 / (184.0 * 184.0)).epsilon(1e-6));
    CHECK(f.imf == doctest::Approx(0.3403).epsilon(1e-3));
    CHECK(std::fabs(f.mass - double(N)) < 1e-3);  // float entries: 1/184 summed N^2 times
    CHECK(f.share(0, 1) == doctest::Approx(144.0 * 40 / (184.0 * 184.0)).epsilon(1e-6));
}

TEST_CASE("fact 5: IMF is invariant to permutations within a modality") {
    const std::int64_t N = 7;
    const auto g = parse_groups("v:0-3,t:4-6", N);
    std::vector<float> A(N * N);
    for (std::int64_t i = 0; i < N; ++i) {
        float s = 0;
        for (std::int64_t j = 0; j < N; ++j)
            s += A[size_t(i * N + j)] = float((i * 7 + j * 3) % 5 + 1);
        for (std::int64_t j = 0; j < N; ++j) A[size_t(i * N + j)] /= s;
    }
    const std::vector<int> perm = {2, 0, 3, 1, 6, 4, 5};  // maps stay inside each group
    std::vector<float> B(N * N);
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) B[size_t(perm[i] * N + perm[j])] = A[size_t(i * N + j)];
    const double a = inter_modality_flow(A.data(), N, N, g).imf;
    CHECK(a > 0.1);
    CHECK(inter_modality_flow(B.data(), N, N, g).imf == doctest::Approx(a).epsilon(1e-12));
    CHECK(std::fabs(inter_modality_flow(A.data(), N, N, g).mass - double(N)) < 1e-6);
}

TEST_CASE("trace reader: NIRGraphData attention layout, index fallbacks, bad input") {
    namespace h5 = ternion::h5;
    const auto dir = std::filesystem::temp_directory_path() / "ternion-test-analysis";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "att.h5").string();
    {
        h5::Writer w(path);
        w.attr("/", "__type__", std::string("NIRGraphData"));
        const std::string g = "/nodes/b0_attn/observables/attention";
        w.group(g);
        std::vector<float> v(2 * 1 * 2 * 3 * 3);
        std::iota(v.begin(), v.end(), 0.f);
        w.write(g + "/scores", v, {2, 1, 2, 3, 3});
        w.write(g + "/samples", std::vector<std::int64_t>{5, 9}, {2});
        w.group("/nodes/conv_lif/observables/spikes");
    }
    CHECK(attention_nodes(path) == std::vector<std::string>{"b0_attn"});
    const auto a = read_attention(path, "b0_attn");
    CHECK(a.map == "scores");  // no weights: falls back
    CHECK(a.samples == 2);
    CHECK(a.heads == 2);
    CHECK(a.rows == 3);
    CHECK(a.sample_ids == std::vector<std::int64_t>{5, 9});
    CHECK(a.step_ids == std::vector<std::int64_t>{0});  // missing: positions
    CHECK(a.sample_pos(9, "sample") == 1);
    CHECK(a.map_at(1, 0, 1)[0] == 27.f);
    CHECK_THROWS_AS(a.sample_pos(3, "sample"), ternion::OptionError);
    CHECK_THROWS_AS(read_attention(path, "nope"), ternion::InputError);
    CHECK_THROWS_AS(read_attention(path, "conv_lif"), ternion::InputError);
    CHECK_THROWS_AS(read_attention(path, "b0_attn", "weights"), ternion::InputError);
    CHECK_THROWS_AS(read_attention(path, "b0_attn", "probs"), ternion::OptionError);
    try {
        read_attention(path, "nope");
    } catch (const ternion::InputError& e) {
        CHECK(std::string(e.what()).find("b0_attn") != std::string::npos);  // names the options
    }
    // docs/traces.md location, a present mask and -inf logits.
    const std::string p2 = (dir / "att2.h5").string();
    {
        h5::Writer w(p2);
        w.group("/nodes");
        const std::string g = "/ternion/attention/blk";
        w.group(g);
        std::vector<float> v(2 * 1 * 1 * 2 * 2, 0.5f);
        v[1] = -std::numeric_limits<float>::infinity();
        w.write(g + "/weights", v, {2, 1, 1, 2, 2});
        w.write(g + "/present", std::vector<std::int8_t>{1, 0}, {2, 1});
    }
    CHECK(attention_nodes(p2) == std::vector<std::string>{"blk"});
    const auto b = read_attention(p2, "blk");
    CHECK(b.group == "/ternion/attention/blk");
    CHECK(b.has(0, 0));
    CHECK_FALSE(b.has(1, 0));
    CHECK(b.nonfinite == 1);
    CHECK(b.map_at(0, 0, 0)[1] == 0.f);
    std::filesystem::remove_all(dir);
}
