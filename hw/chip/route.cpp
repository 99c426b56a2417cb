// Routing on a mesh by SANA-FE's rule (chip-model.md D.4): dimension-order hops, the energy of
// the destination tile, the latency of the source tile, the packets on each link; and SRAM
// energy by size. Pure functions of their arguments, so tests can hand-work them.
#include <algorithm>
#include <array>

#include "hw/chip/mesh.hpp"

namespace ternion::chip {

Mesh Mesh::uniform(const MeshSpec& s) {
    Mesh m;
    m.width = s.width, m.height = s.height, m.cores_per_tile = s.cores_per_tile;
    m.spike_pj = s.spike_pj, m.spike_ns = s.spike_ns;
    const auto t = static_cast<std::size_t>(s.tiles());
    m.pj_ew.assign(t, s.hop_pj_ew), m.pj_ns.assign(t, s.hop_pj_ns);
    m.ns_ew.assign(t, s.hop_ns_ew), m.ns_ns.assign(t, s.hop_ns_ns);
    return m;
}

std::array<std::int64_t, 2> Mesh::tile_of(std::int64_t core) const {
    const std::int64_t t = core < 0 ? 0 : core / cores_per_tile;
    return {t % width, t / width};
}

namespace {

// The dimension-order path from tile (sx, sy) to (dx, dy): x first on the source's row, then y
// on the destination's column. Adds `w` to every link crossed; returns the hops along x and y.
std::array<double, 2> walk_xy(const Mesh& m, std::int64_t sx, std::int64_t sy, std::int64_t dx,
                              std::int64_t dy, double w, std::vector<double>& links) {
    std::int64_t x = sx, y = sy, hx = 0, hy = 0;
    for (; x != dx; ++hx) {
        const int step = dx > x ? 1 : -1;
        links[static_cast<std::size_t>(link_index(y * m.width + x, step > 0 ? kPlusX : kMinusX))] +=
            w;
        x += step;
    }
    for (; y != dy; ++hy) {
        const int step = dy > y ? 1 : -1;
        links[static_cast<std::size_t>(link_index(y * m.width + x, step > 0 ? kPlusY : kMinusY))] +=
            w;
        y += step;
    }
    return {static_cast<double>(hx), static_cast<double>(hy)};
}

}  // namespace

RouteTotals route(const Mesh& m, const std::vector<Flow>& flows, std::int64_t cores) {
    RouteTotals r;
    const auto n = static_cast<std::size_t>(std::max<std::int64_t>(cores, 0));
    r.core_packets.assign(n, 0), r.core_pj.assign(n, 0), r.core_flight_ns.assign(n, 0);
    r.link_packets.assign(static_cast<std::size_t>(link_index(m.width * m.height, 0)), 0);
    for (const Flow& f : flows) {
        if (f.spikes <= 0) continue;
        const auto [sx, sy] = m.tile_of(f.src);
        const auto st = static_cast<std::size_t>(sy * m.width + sx);
        double pj = 0, hops = 0, flight = 0;
        for (std::int64_t d : f.dst) {
            const auto [dx, dy] = m.tile_of(d);
            const auto dt = static_cast<std::size_t>(dy * m.width + dx);
            const auto [hx, hy] = walk_xy(m, sx, sy, dx, dy, f.spikes, r.link_packets);
            hops += hx + hy;
            pj += m.spike_pj + hx * m.pj_ew[dt] + hy * m.pj_ns[dt];
            flight = std::max(flight, m.spike_ns + hx * m.ns_ew[st] + hy * m.ns_ns[st]);
        }
        const double packets = f.spikes * static_cast<double>(f.dst.size());
        r.packets += packets, r.hops += f.spikes * hops, r.energy_pj += f.spikes * pj;
        if (f.src < 0 || static_cast<std::size_t>(f.src) >= n) {
            r.host_packets += packets, r.host_pj += f.spikes * pj;
            continue;
        }
        const auto k = static_cast<std::size_t>(f.src);
        r.core_packets[k] += packets, r.core_pj[k] += f.spikes * pj;
        r.core_flight_ns[k] = std::max(r.core_flight_ns[k], flight);
    }
    return r;
}

double sram_pj(const MeshSpec& s, double bytes) {
    double x0 = 0, y0 = 0;
    for (const auto& [x1, y1] : s.sram_pj) {
        if (bytes <= x1) return y0 + (y1 - y0) * (bytes - x0) / (x1 - x0);
        x0 = x1, y0 = y1;
    }
    return y0;
}

}  // namespace ternion::chip
