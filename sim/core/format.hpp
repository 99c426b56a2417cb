// Small formatting and summary helpers shared by the reports (CLI tables, run reports).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace ternion {

// Formats a count with thousands separators: 1234567 -> "1,234,567".
// The column width that holds every layer's name (type: its type) whole, at least `least`:
// report tables widen rather than cut names.
template <class Layers>
int name_column(const Layers& layers, bool type, std::size_t least) {
    std::size_t w = least;
    for (const auto& l : layers) w = std::max(w, (type ? l.type : l.name).size());
    return static_cast<int>(w);
}

inline std::string group_digits(std::uint64_t v) {
    const std::string s = std::to_string(v);
    std::string r;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i && (s.size() - i) % 3 == 0) r.push_back(',');
        r.push_back(s[i]);
    }
    return r;
}

// Median, minimum and maximum of timings (any unit; zeros when there are none).
struct Spread {
    double median = 0, min = 0, max = 0;
};
inline Spread spread(std::vector<double> v) {
    if (v.empty()) return {};
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size();
    return {m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]), v.front(), v.back()};
}

}  // namespace ternion
