// ColumnWeights, the column store of Linear layers, against the matrix it was built from: every
// entry read back, and column deliveries (+1, -1, analog) equal to the plain loop, whole and
// block by block, for dense and compressed storage, built from dense weights and from CSR rows,
// built once and split into 1 to 5 row blocks (one per thread of a run) afterwards, with a
// codebook of one or several values or none. Every split must agree with the matrix.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sim/synaptic/synaptic.hpp"

using namespace ternion;

namespace {

// Row-major [out][in] with about `density` non-zeros drawn from `values` distinct levels (0: any).
std::vector<float> random_matrix(std::int64_t out, std::int64_t in, double density, int values,
                                 std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f), w(-2.0f, 2.0f);
    std::vector<float> m(static_cast<std::size_t>(out * in), 0.0f);
    for (auto& x : m)
        if (u(rng) < density)
            x = values == 0 ? w(rng)
                            : 0.25f * static_cast<float>(1 + static_cast<int>(u(rng) * values));
    // An empty column and a full one: runs of length 0 and of every row.
    for (std::int64_t r = 0; r < out; ++r) {
        m[static_cast<std::size_t>(r * in + 1)] = 0.0f;
        m[static_cast<std::size_t>(r * in + 2)] =
            values == 0 ? 0.5f + static_cast<float>(r) : 0.25f;
    }
    return m;
}

void to_csr(const std::vector<float>& m, std::int64_t out, std::int64_t in,
            std::vector<std::int64_t>& indptr, std::vector<std::int64_t>& indices,
            std::vector<float>& data) {
    indptr.assign(1, 0);
    indices.clear();
    data.clear();
    for (std::int64_t r = 0; r < out; ++r) {
        for (std::int64_t c = 0; c < in; ++c)
            if (float v = m[static_cast<std::size_t>(r * in + c)]; v != 0.0f) {
                indices.push_back(c);
                data.push_back(v);
            }
        indptr.push_back(static_cast<std::int64_t>(data.size()));
    }
}

void check(const ColumnWeights& cw, const RowSplit& s, const std::vector<float>& m,
           std::int64_t out, std::int64_t in) {
    for (std::int64_t r = 0; r < out; ++r)
        for (std::int64_t c = 0; c < in; ++c)
            REQUIRE(cw.at(r, c) == m[static_cast<std::size_t>(r * in + c)]);
    // Blocks are whole 64-row groups, one per part while rows last.
    CHECK(s.block % 64 == 0);
    CHECK(s.nblocks <= s.parts);
    CHECK(s.nblocks * s.block >= out);
    CHECK((s.nblocks - 1) * s.block < out);
    for (std::int64_t c = 0; c < in; ++c) {
        // Analog 0.5: the product is exact, so a fused multiply-add rounds as mul + add does.
        const float xs[] = {1.0f, -1.0f, 0.5f};
        for (int mode = 0; mode < 3; ++mode) {
            const bool unit = mode < 2;
            const float x = xs[mode];
            std::vector<float> whole(static_cast<std::size_t>(out), 0.5f), blocks = whole,
                                                                           want = whole;
            for (std::int64_t r = 0; r < out; ++r) {
                const float v = m[static_cast<std::size_t>(r * in + c)];
                if (v == 0.0f) continue;
                auto& y = want[static_cast<std::size_t>(r)];
                y = unit ? (x > 0 ? y + v : y - v) : y + x * v;
            }
            cw.add_column(c, x, unit, whole.data(), s, 0, s.nblocks);
            for (std::int64_t b = 0; b < s.nblocks; ++b)
                cw.add_column(c, x, unit, blocks.data(), s, b, b + 1);
            REQUIRE(whole == want);
            REQUIRE(blocks == want);
        }
    }
}

}  // namespace

TEST_CASE("ColumnWeights: entries and column deliveries equal the matrix for every block split") {
    struct Case {
        std::int64_t out, in;
        double density;
        int values;
    };
    const Case cases[] = {{300, 40, 0.05, 0}, {300, 40, 0.05, 1}, {300, 40, 0.1, 5},
                          {130, 17, 0.6, 0},  {64, 9, 0.02, 0},   {1, 5, 0.5, 0}};
    std::uint32_t seed = 7;
    for (const auto& k : cases)
        for (bool codebook : {true, false}) {
            CAPTURE(k.out);
            CAPTURE(k.density);
            CAPTURE(k.values);
            CAPTURE(codebook);
            const auto m = random_matrix(k.out, k.in, k.density, k.values, ++seed);
            ColumnWeights dense;
            dense.set_codebook(codebook);
            dense.build(m, k.out, k.in);
            const auto nnz = static_cast<double>(
                std::count_if(m.begin(), m.end(), [](float v) { return v != 0.0f; }));
            CHECK(dense.sparse() == (nnz < 0.25 * static_cast<double>(m.size())));
            std::vector<std::int64_t> indptr, indices;
            std::vector<float> data;
            to_csr(m, k.out, k.in, indptr, indices, data);
            ColumnWeights csr;
            csr.set_codebook(codebook);
            csr.build_csr(indptr, indices, data, k.out, k.in);
            CHECK(csr.nnz() == data.size());
            for (int parts = 1; parts <= 5; ++parts) {
                CAPTURE(parts);
                RowSplit s;
                dense.split(parts, s);
                check(dense, s, m, k.out, k.in);
                csr.split(parts, s);
                check(csr, s, m, k.out, k.in);
            }
        }
}

TEST_CASE("ColumnWeights: more rows than 16-bit offsets reach (block-local rows)") {
    // Up to 65472 rows a column's runs hold whole-layer row numbers; past that each storage block
    // counts from its first row. Both sides of the boundary, split into 1 to 3 row blocks that
    // cross storage blocks.
    for (const std::int64_t out : {std::int64_t{65472}, std::int64_t{70001}}) {
        const std::int64_t in = 3;
        std::mt19937 rng(static_cast<std::uint32_t>(out));
        std::uniform_real_distribution<float> u(0.0f, 1.0f);
        std::vector<float> m(static_cast<std::size_t>(out * in), 0.0f);
        for (auto& x : m)
            if (u(rng) < 0.01f) x = u(rng) - 0.5f;
        m[static_cast<std::size_t>((out - 1) * in)] = 0.75f;  // the last row
        std::vector<std::int64_t> indptr, indices;
        std::vector<float> data;
        to_csr(m, out, in, indptr, indices, data);
        ColumnWeights cw;
        cw.set_codebook(false);
        cw.build_csr(indptr, indices, data, out, in);
        REQUIRE(cw.sparse());
        CHECK(cw.nblocks() == (out > ColumnWeights::kMaxBlock ? 2 : 1));
        CHECK(cw.at(out - 1, 0) == 0.75f);
        for (int parts = 1; parts <= 3; ++parts) {
            CAPTURE(out);
            CAPTURE(parts);
            RowSplit s;
            cw.split(parts, s);
            CHECK(s.nblocks == parts);
            for (std::int64_t c = 0; c < in; ++c) {
                std::vector<float> whole(static_cast<std::size_t>(out), 0.5f), blocks = whole,
                                                                               want = whole;
                for (std::int64_t r = 0; r < out; ++r)
                    want[static_cast<std::size_t>(r)] -= m[static_cast<std::size_t>(r * in + c)];
                cw.add_column(c, -1.0f, true, whole.data(), s, 0, s.nblocks);
                for (std::int64_t b = 0; b < s.nblocks; ++b)
                    cw.add_column(c, -1.0f, true, blocks.data(), s, b, b + 1);
                CHECK(whole == want);
                CHECK(blocks == want);
            }
        }
    }
}
