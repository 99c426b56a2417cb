#include "attention/analysis/analysis_imf.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/core/error.hpp"

namespace ternion::analysis {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (true) {
        auto p = s.find(sep, start);
        out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
        if (p == std::string::npos) return out;
        start = p + 1;
    }
}

std::int64_t to_index(const std::string& s, const std::string& item) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 12)
        throw OptionError("groups", "'" + item + "': expected a token index, got '" + s + "'");
    return std::stoll(s);
}

}  // namespace

std::vector<TokenGroup> parse_groups(const std::string& spec, std::int64_t ntokens) {
    std::vector<TokenGroup> groups;
    std::vector<int> owner(static_cast<std::size_t>(ntokens), -1);
    for (const auto& item : split(spec, ',')) {
        const auto colon = item.find(':');
        if (colon == std::string::npos || colon == 0)
            throw OptionError("groups", "'" + item + "': expected NAME:RANGE, e.g. text:0-39");
        TokenGroup g;
        g.name = item.substr(0, colon);
        for (auto& o : groups)
            if (o.name == g.name) throw OptionError("groups", "group '" + g.name + "' repeated");
        for (const auto& r : split(item.substr(colon + 1), '+')) {
            const auto dash = r.find('-');
            const auto lo = to_index(r.substr(0, dash), item);
            const auto hi = dash == std::string::npos ? lo : to_index(r.substr(dash + 1), item);
            if (hi < lo) throw OptionError("groups", "'" + item + "': empty range " + r);
            if (hi >= ntokens)
                throw OptionError("groups", "'" + item + "': token " + std::to_string(hi) +
                                                " out of range (the maps have " +
                                                std::to_string(ntokens) + " tokens)");
            for (auto t = lo; t <= hi; ++t) {
                auto& o = owner[static_cast<std::size_t>(t)];
                if (o >= 0)
                    throw OptionError("groups", "token " + std::to_string(t) + " is in both '" +
                                                    groups[size_t(o)].name + "' and '" + g.name +
                                                    "'");
                o = static_cast<int>(groups.size());
                g.tokens.push_back(t);
            }
        }
        std::sort(g.tokens.begin(), g.tokens.end());
        groups.push_back(std::move(g));
    }
    if (groups.size() < 2) throw OptionError("groups", "need at least two groups");
    return groups;
}

Flow inter_modality_flow(const float* A, std::int64_t rows, std::int64_t cols,
                         const std::vector<TokenGroup>& groups) {
    const auto G = static_cast<Eigen::Index>(groups.size());
    Flow f;
    f.share = Eigen::MatrixXd::Zero(G, G);
    for (Eigen::Index g = 0; g < G; ++g)
        for (Eigen::Index h = 0; h < G; ++h) {
            double s = 0;
            for (auto i : groups[size_t(g)].tokens) {
                if (i >= rows) continue;
                const float* row = A + i * cols;
                // |A|: signed (ternary) spiking maps count their mass, not their sum.
                for (auto j : groups[size_t(h)].tokens)
                    if (j < cols) s += std::fabs(double(row[j]));
            }
            f.share(g, h) = s;
        }
    f.mass = f.share.sum();
    if (f.mass <= 0) {
        f.imf = std::numeric_limits<double>::quiet_NaN();
        return f;
    }
    f.share /= f.mass;
    f.imf = 1.0 - f.share.trace();
    f.imf = std::clamp(f.imf, 0.0, 1.0);
    return f;
}

}  // namespace ternion::analysis
