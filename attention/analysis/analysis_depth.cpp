#include "attention/analysis/analysis_depth.hpp"

#include <cmath>
#include <iterator>
#include <numbers>
#include <random>

#include "sim/core/error.hpp"

namespace ternion::analysis {

double depth_threshold(double width) {
    if (!(width >= 1)) throw OptionError("width", "must be >= 1");
    return std::log(width) / std::log(3.0);
}

Regime regime(int depth, double width) {
    const double th = depth_threshold(width);
    if (std::fabs(depth - th) <= 1e-9 * std::max(1.0, th)) return Regime::threshold;
    return depth < th ? Regime::depth_efficient : Regime::width_limited;
}

const char* regime_name(Regime r) {
    // In Regime's order.
    static constexpr const char* names[] = {"depth-efficient", "threshold", "width-limited"};
    static_assert(std::size(names) == static_cast<std::size_t>(Regime::width_limited) + 1);
    const auto k = static_cast<std::size_t>(r);
    return k < std::size(names) ? names[k] : "?";
}

double log_monomials(double m, double d) {
    // ln C(a + b, b) with a = m, b = d - 1; symmetric in a and b.
    const double a = std::max(m, d - 1), b = std::min(m, d - 1);
    if (b <= 0) return 0.0;
    if (b < 16) {
        // Exact: prod_{k=1..b} (a + k) / k.
        double s = 0;
        for (int k = 1; k <= static_cast<int>(std::lround(b)); ++k) s += std::log1p(a / k);
        return s;
    }
    // Stirling for ln Gamma(x+1) in all three terms; the x ln x parts combine into log1p forms
    // so nothing cancels catastrophically even when a is astronomically larger than b.
    const double n = a + b;
    return a * std::log1p(b / a) + b * std::log1p(a / b) +
           0.5 * (std::log(n) - std::log(2 * std::numbers::pi) - std::log(a) - std::log(b)) +
           (1.0 / n - 1.0 / a - 1.0 / b) / 12.0;
}

double log_sep_proxy(int depth, double width) {
    if (regime(depth, width) == Regime::width_limited) return depth * width * std::log(3.0);
    return std::pow(3.0, depth) * std::log(width);
}

namespace {

DepthRow make_row(int L, double d) {
    DepthRow r;
    r.depth = L;
    r.width = d;
    r.params = transformer_params(L, d);
    r.threshold = depth_threshold(d);
    r.regime = regime(L, d);
    r.log_sep = log_sep_proxy(L, d);
    r.log_monos = log_monomials(std::pow(3.0, L), std::max(1.0, std::round(d)));
    return r;
}

void check_depth(int max_depth) {
    // 3^L must stay finite in a double.
    if (max_depth < 1 || max_depth > 600) throw OptionError("max-depth", "must be in 1..600");
}

}  // namespace

std::vector<DepthRow> width_scan(double width, int max_depth) {
    depth_threshold(width);
    check_depth(max_depth);
    std::vector<DepthRow> rows;
    for (int L = 1; L <= max_depth; ++L) rows.push_back(make_row(L, width));
    return rows;
}

std::vector<DepthRow> budget_scan(double params, int max_depth) {
    if (!(params >= 12) || !std::isfinite(params))
        throw OptionError("params", "must be a finite budget >= 12 (one layer of width 1)");
    check_depth(max_depth);
    std::vector<DepthRow> rows;
    for (int L = 1; L <= max_depth; ++L) {
        const double d = std::sqrt(params / (12.0 * L));
        if (d < 1) break;
        rows.push_back(make_row(L, d));
    }
    return rows;
}

int budget_crossover(const std::vector<DepthRow>& scan) {
    for (auto& r : scan)
        if (r.regime != Regime::depth_efficient) return r.depth;
    return 0;
}

Eigen::MatrixXd linear_attention(const Eigen::MatrixXd& X,
                                 const std::vector<LinearAttentionLayer>& layers) {
    Eigen::MatrixXd Y = X;
    for (auto& l : layers) {
        Eigen::MatrixXd q = Y * l.Wq, k = Y * l.Wk, v = Y * l.Wv;
        Y = (q * k.transpose()) * v;
    }
    return Y;
}

std::vector<LinearAttentionLayer> random_linear_layers(int depth, int width, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> nd(0.0, 1.0 / std::sqrt(double(width)));
    auto mat = [&] {
        Eigen::MatrixXd m(width, width);
        for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = nd(rng);
        return m;
    };
    std::vector<LinearAttentionLayer> ls;
    for (int l = 0; l < depth; ++l) ls.push_back({mat(), mat(), mat()});
    return ls;
}

int separation_rank(const std::vector<LinearAttentionLayer>& layers, int points, std::uint64_t seed,
                    double rel_tol) {
    if (layers.empty()) return 0;
    const auto d = layers[0].Wq.rows();
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto vec = [&] {
        Eigen::VectorXd v(d);
        for (Eigen::Index i = 0; i < d; ++i) v(i) = u(rng);
        return v;
    };
    const Eigen::VectorXd readout = vec();
    std::vector<Eigen::VectorXd> p0, p1;
    for (int i = 0; i < points; ++i) p0.push_back(vec());
    for (int i = 0; i < points; ++i) p1.push_back(vec());
    Eigen::MatrixXd M(points, points);
    Eigen::MatrixXd X(2, d);
    for (int a = 0; a < points; ++a)
        for (int b = 0; b < points; ++b) {
            X.row(0) = p0[size_t(a)].transpose();
            X.row(1) = p1[size_t(b)].transpose();
            M(a, b) = linear_attention(X, layers).row(0).dot(readout);
        }
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(M);
    const auto& s = svd.singularValues();
    int r = 0;
    for (Eigen::Index i = 0; i < s.size(); ++i)
        if (s(i) > rel_tol * s(0)) ++r;
    return r;
}

}  // namespace ternion::analysis
