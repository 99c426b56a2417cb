// Depth/width analysis of self-attention (Levine et al., "Limits to Depth Efficiencies of
// Self-Attention", NeurIPS 2020; see docs/analysis.md): the depth threshold log3(width), the
// regime of a (depth, width) pair, separation-rank proxies and a parameter-budget scan.
// Also a tiny linear (softmax-free, FFN-free) self-attention network, the object of the
// theory, to check its degree and separation rank numerically.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <string>
#include <vector>

namespace ternion::analysis {

// L_th = log3(width). Width must be >= 1.
double depth_threshold(double width);

enum class Regime { depth_efficient, threshold, width_limited };
Regime regime(int depth, double width);  // depth < L_th, == L_th (1e-9), > L_th
const char* regime_name(Regime r);       // "depth-efficient", "threshold", "width-limited"

// ln C(m + d - 1, d - 1): the number of monomials of degree m in d variables, for integral
// m, d >= 1 (exact sum for small arguments, Stirling with its 1/12x terms for large ones).
double log_monomials(double m, double d);
// The separation-rank proxy of the paper's two regimes: 3^L ln d below the threshold,
// L d ln 3 above it (both equal to the monomial count's leading term in their regime).
double log_sep_proxy(int depth, double width);

struct DepthRow {
    int depth = 0;
    double width = 0;      // d_x
    double params = 0;     // 12 L d_x^2 (attention 4 d^2 + FFN 8 d^2; embeddings excluded)
    double threshold = 0;  // log3(width)
    Regime regime = Regime::depth_efficient;
    double log_sep = 0;    // log_sep_proxy
    double log_monos = 0;  // log_monomials(3^L, round(width))
};

inline double transformer_params(int depth, double width) {
    return 12.0 * depth * width * width;
}

// Depths 1..max_depth at a fixed width.
std::vector<DepthRow> width_scan(double width, int max_depth);
// Depths 1..max_depth at a fixed budget P: d_x = sqrt(P / (12 L)); stops before d_x < 1.
std::vector<DepthRow> budget_scan(double params, int max_depth);
// Smallest depth of a budget scan that is no longer depth-efficient (L >= log3 d_x(L)), or
// 0 if every scanned depth is depth-efficient.
int budget_crossover(const std::vector<DepthRow>& scan);

// One softmax-free, FFN-free self-attention layer: X -> (X Wq)(X Wk)^T (X Wv), X is N x d.
struct LinearAttentionLayer {
    Eigen::MatrixXd Wq, Wk, Wv;
};
Eigen::MatrixXd linear_attention(const Eigen::MatrixXd& X,
                                 const std::vector<LinearAttentionLayer>& layers);
// Random layers (entries N(0, 1/d)) from a fixed seed.
std::vector<LinearAttentionLayer> random_linear_layers(int depth, int width, std::uint64_t seed);
// Numerical separation rank of the readout r . y(X)[0, :] of a two-token network w.r.t. the
// partition ({token 0}, {token 1}): the rank of the matrix f(x0_a, x1_b) over `points` random
// values of each token (singular values above rel_tol times the largest).
int separation_rank(const std::vector<LinearAttentionLayer>& layers, int points, std::uint64_t seed,
                    double rel_tol = 1e-9);

}  // namespace ternion::analysis
