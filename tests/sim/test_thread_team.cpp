// ThreadTeam: every index of a job is visited exactly once, by contiguous parts, over many
// back-to-back jobs; an exception in any member reaches the caller and the team stays usable.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "sim/core/node.hpp"

using ternion::ThreadTeam;

TEST_CASE("ThreadTeam visits each index once, in contiguous parts, job after job") {
    for (int size : {1, 2, 3, 5}) {
        ThreadTeam team(size);
        CHECK(team.size() == size);
        for (std::int64_t n : {0, 1, 2, 3, 7, 64, 1000}) {
            std::vector<int> hits(static_cast<std::size_t>(n), 0);
            std::atomic<int> parts{0};
            for (int rep = 0; rep < 50; ++rep)
                team.for_parts(n, [&](std::int64_t b, std::int64_t e) {
                    REQUIRE(b < e);  // empty parts are not called
                    for (auto i = b; i < e; ++i) ++hits[static_cast<std::size_t>(i)];
                    ++parts;
                });
            for (auto h : hits) CHECK(h == 50);
            // Never more parts than members, never more than indices.
            CHECK(parts.load() <= 50 * std::min<std::int64_t>(size, n));
        }
    }
}

TEST_CASE("ThreadTeam rethrows a member's exception and keeps working") {
    ThreadTeam team(2);
    CHECK_THROWS_AS(team.for_parts(10,
                                   [](std::int64_t b, std::int64_t) {
                                       if (b >= 5) throw std::runtime_error("second part");
                                   }),
                    std::runtime_error);
    std::atomic<std::int64_t> sum{0};
    team.for_parts(100, [&](std::int64_t b, std::int64_t e) {
        for (auto i = b; i < e; ++i) sum += i;
    });
    CHECK(sum.load() == 4950);
}

TEST_CASE("row_part_size splits into whole cache lines covering every row") {
    CHECK(ternion::row_part_size(1000, 2) == 512);
    CHECK(ternion::row_part_size(16000, 2) == 8000);
    CHECK(ternion::row_part_size(10, 4) == 64);
    CHECK(ternion::row_part_size(4000, 3) == 1344);
    for (std::int64_t n : {1, 63, 65, 1000, 4097})
        for (std::int64_t p : {1, 2, 3, 8}) {
            const auto b = ternion::row_part_size(n, p);
            CHECK(b % 64 == 0);
            CHECK(b * p >= n);
        }
}
