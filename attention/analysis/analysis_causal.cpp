#include "attention/analysis/analysis_causal.hpp"

#include <algorithm>
#include <cmath>

namespace ternion::analysis {

Eigen::MatrixXd attention_covariance(const Eigen::MatrixXd& A) {
    return A * A.transpose();
}

Eigen::MatrixXd correlation(const Eigen::MatrixXd& C, std::vector<int>* degenerate) {
    const auto n = C.rows();
    Eigen::VectorXd sd(n);
    std::vector<bool> bad(static_cast<std::size_t>(n), false);
    for (Eigen::Index i = 0; i < n; ++i) {
        bad[static_cast<std::size_t>(i)] = !(C(i, i) > 1e-8);
        sd(i) = bad[static_cast<std::size_t>(i)] ? 1.0 : std::sqrt(C(i, i));
        if (bad[static_cast<std::size_t>(i)] && degenerate) degenerate->push_back(int(i));
    }
    Eigen::MatrixXd R(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j < n; ++j) {
            if (i == j) {
                R(i, j) = 1.0;
            } else if (bad[static_cast<std::size_t>(i)] || bad[static_cast<std::size_t>(j)]) {
                R(i, j) = 0.0;
            } else {
                // Rounding can push |R| a hair above 1; clamp so atanh stays defined.
                R(i, j) = std::clamp(C(i, j) / (sd(i) * sd(j)), -1.0, 1.0);
            }
        }
    return R;
}

double partial_correlation(const Eigen::MatrixXd& R, int x, int y, const std::vector<int>& z) {
    if (z.empty()) return R(x, y);
    if (z.size() == 1) {
        const int w = z[0];
        const double den = (1 - R(x, w) * R(x, w)) * (1 - R(y, w) * R(y, w));
        // x or y is a copy of w: a deterministic relation, outside what the test can judge;
        // like the reference code's |rho| >= 1 case it counts as dependent.
        if (den <= 1e-24) return 1.0;
        return (R(x, y) - R(x, w) * R(y, w)) / std::sqrt(den);
    }
    // Residual covariance of (x, y) after regressing on z; equals the precision-matrix form
    // -P01/sqrt(P00 P11) when R[(x,y,z)] is invertible and stays defined when it is not.
    const auto k = static_cast<Eigen::Index>(z.size());
    Eigen::MatrixXd Rzz(k, k);
    Eigen::MatrixXd Rz2(k, 2);
    for (Eigen::Index a = 0; a < k; ++a) {
        for (Eigen::Index b = 0; b < k; ++b) Rzz(a, b) = R(z[size_t(a)], z[size_t(b)]);
        Rz2(a, 0) = R(z[size_t(a)], x);
        Rz2(a, 1) = R(z[size_t(a)], y);
    }
    Eigen::MatrixXd sol = Rzz.completeOrthogonalDecomposition().solve(Rz2);
    Eigen::Matrix2d S;
    S << R(x, x), R(x, y), R(y, x), R(y, y);
    S -= Rz2.transpose() * sol;
    if (S(0, 0) <= 1e-12 || S(1, 1) <= 1e-12) return 1.0;  // deterministic: dependent

    return S(0, 1) / std::sqrt(S(0, 0) * S(1, 1));
}

double fisher_z_pvalue(double rho, std::int64_t n, std::size_t k) {
    if (!(std::fabs(rho) < 1.0)) return 0.0;
    const double dof = static_cast<double>(n) - static_cast<double>(k) - 3.0;
    if (dof <= 0) return 0.0;
    const double stat = std::sqrt(dof) * std::fabs(std::atanh(rho));
    // 2 (1 - Phi(stat)) = erfc(stat / sqrt 2), without cancellation for large statistics.
    return std::erfc(stat / std::sqrt(2.0));
}

std::vector<int> CausalGraph::neighbours(int i) const {
    std::vector<int> r;
    for (int j = 0; j < n; ++j)
        if (j != i && adjacent(i, j)) r.push_back(j);
    return r;
}

std::vector<std::string> CausalGraph::edge_strings(const std::vector<std::string>& names) const {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) {
            if (!adjacent(i, j)) continue;
            const char* l = at(j, i) == Mark::arrow ? "<" : "-";
            const char* r = at(i, j) == Mark::arrow ? ">" : "-";
            out.push_back(names[size_t(i)] + " " + l + "-" + r + " " + names[size_t(j)]);
        }
    return out;
}

namespace {

// Calls fn(subset) for every size-k subset of v (lexicographic); stops when fn returns true.
template <class F>
bool for_subsets(const std::vector<int>& v, int k, F&& fn) {
    const int m = static_cast<int>(v.size());
    if (k > m) return false;
    std::vector<int> idx(static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i) idx[size_t(i)] = i;
    std::vector<int> s(static_cast<std::size_t>(k));
    while (true) {
        for (int i = 0; i < k; ++i) s[size_t(i)] = v[size_t(idx[size_t(i)])];
        if (fn(s)) return true;
        int i = k - 1;
        while (i >= 0 && idx[size_t(i)] == m - k + i) --i;
        if (i < 0) return false;
        ++idx[size_t(i)];
        for (int j = i + 1; j < k; ++j) idx[size_t(j)] = idx[size_t(j - 1)] + 1;
    }
}

// One pass of Meek's rules R1-R3; returns whether an edge was oriented.
bool meek_pass(CausalGraph& g) {
    const int n = g.n;
    auto orient = [&](int a, int b) {  // a -> b
        g.mark[size_t(a * n + b)] = Mark::arrow;
        g.mark[size_t(b * n + a)] = Mark::tail;
    };
    bool changed = false;
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) {
            if (a == b || !g.undirected(a, b)) continue;
            bool go = false;
            for (int c = 0; c < n && !go; ++c) {
                if (c == a || c == b) continue;
                // R1: c -> a - b, c and b not adjacent  =>  a -> b
                if (g.directed(c, a) && !g.adjacent(c, b)) go = true;
                // R2: a -> c -> b  =>  a -> b
                if (g.directed(a, c) && g.directed(c, b)) go = true;
            }
            // R3: a - c -> b, a - d -> b, c and d not adjacent  =>  a -> b
            for (int c = 0; c < n && !go; ++c) {
                if (c == a || c == b || !g.undirected(a, c) || !g.directed(c, b)) continue;
                for (int d = c + 1; d < n && !go; ++d) {
                    if (d == a || d == b || !g.undirected(a, d) || !g.directed(d, b)) continue;
                    if (!g.adjacent(c, d)) go = true;
                }
            }
            if (go) {
                orient(a, b);
                changed = true;
            }
        }
    return changed;
}

}  // namespace

CausalGraph pc_search(const FisherZTest& test, int nvars, const PcOptions& opt) {
    CausalGraph g;
    const int n = nvars;
    g.n = n;
    const auto nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    g.mark.assign(nn, Mark::tail);
    g.sepset.assign(nn, {});
    g.separated.assign(nn, false);
    g.sep_pvalue.assign(nn, 0.0);
    for (int i = 0; i < n; ++i) g.mark[size_t(i * n + i)] = Mark::none;

    // Skeleton, PC-stable: adjacency sets are frozen at the start of each order so the result
    // does not depend on the order in which pairs are visited.
    for (int order = 0;; ++order) {
        if (opt.max_cond >= 0 && order > opt.max_cond) break;
        std::vector<std::vector<int>> adj(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) adj[size_t(i)] = g.neighbours(i);
        bool any = false;
        for (int x = 0; x < n; ++x)
            for (int y : adj[size_t(x)]) {
                if (!g.adjacent(x, y)) continue;
                std::vector<int> cand;
                for (int c : adj[size_t(x)])
                    if (c != y) cand.push_back(c);
                if (static_cast<int>(cand.size()) < order) continue;
                any = true;
                g.max_order = std::max(g.max_order, order);
                for_subsets(cand, order, [&](const std::vector<int>& s) {
                    ++g.tests;
                    const double p = test.pvalue(x, y, s);
                    if (p <= test.alpha) return false;
                    for (auto [a, b] : {std::pair{x, y}, std::pair{y, x}}) {
                        const auto k = size_t(a * n + b);
                        g.mark[k] = Mark::none;
                        g.sepset[k] = s;
                        g.separated[k] = true;
                        g.sep_pvalue[k] = p;
                    }
                    return true;
                });
            }
        if (!any) break;
    }

    // V-structures x -> z <- y.
    std::vector<Mark> marks = g.mark;  // decide on the skeleton, apply together
    for (int z = 0; z < n; ++z) {
        const auto nb = g.neighbours(z);
        for (std::size_t a = 0; a < nb.size(); ++a)
            for (std::size_t b = a + 1; b < nb.size(); ++b) {
                const int x = nb[a], y = nb[b];
                if (g.adjacent(x, y)) continue;
                const auto& s = g.sepset[size_t(x * n + y)];
                if (std::find(s.begin(), s.end(), z) != s.end()) continue;
                marks[size_t(x * n + z)] = Mark::arrow;
                marks[size_t(y * n + z)] = Mark::arrow;
            }
    }
    g.mark = marks;
    while (meek_pass(g)) {
    }
    return g;
}

std::string to_dot(const CausalGraph& g, const std::vector<std::string>& names,
                   const std::string& title) {
    std::string s = "digraph \"" + title + "\" {\n  node [shape=ellipse];\n";
    for (int i = 0; i < g.n; ++i) s += "  \"" + names[size_t(i)] + "\";\n";
    for (int i = 0; i < g.n; ++i)
        for (int j = i + 1; j < g.n; ++j) {
            if (!g.adjacent(i, j)) continue;
            const bool hi = g.at(j, i) == Mark::arrow, hj = g.at(i, j) == Mark::arrow;
            std::string a = names[size_t(i)], b = names[size_t(j)];
            std::string attr;
            if (hi && hj) {
                attr = " [dir=both]";
            } else if (hi) {
                std::swap(a, b);
            } else if (!hj) {
                attr = " [dir=none]";
            }
            s += "  \"" + a + "\" -> \"" + b + "\"" + attr + ";\n";
        }
    return s + "}\n";
}

}  // namespace ternion::analysis
