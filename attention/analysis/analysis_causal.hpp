// Causal reading of an attention map (ABCD, Rohekar et al. NeurIPS 2023; see
// docs/analysis.md): A is taken as the reduced form of a linear SEM over the tokens, so the
// token covariance is C = A·Aᵀ. From it: correlations, Fisher-z partial-correlation
// independence tests, and a PC search (skeleton + v-structures + Meek rules) giving a graph.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <string>
#include <vector>

namespace ternion::analysis {

// C = A·Aᵀ (rows of A are the variables).
Eigen::MatrixXd attention_covariance(const Eigen::MatrixXd& A);

// R_ij = C_ij / sqrt(C_ii C_jj). A variable whose variance is <= 1e-8 (an all-zero attention
// row, common in spiking attention) has no defined correlation: it gets R_ii = 1 and 0 off the
// diagonal, and its index is appended to `degenerate` when given.
Eigen::MatrixXd correlation(const Eigen::MatrixXd& C, std::vector<int>* degenerate = nullptr);

// Partial correlation of x and y given z: closed forms for |z| <= 1, the precision matrix of
// R[(x, y, z), (x, y, z)] above that (a pseudo-inverse when singular). When z determines x or
// y exactly (copied attention rows) the result is 1: the pair then counts as dependent.
double partial_correlation(const Eigen::MatrixXd& R, int x, int y, const std::vector<int>& z);

// Two-sided p-value of the Fisher-z test of rho = 0 with `n` records and `k` conditioning
// variables: statistic sqrt(n - k - 3)·|atanh(rho)|. |rho| >= 1 and n - k - 3 <= 0 give 0
// (dependent: no evidence for independence).
double fisher_z_pvalue(double rho, std::int64_t n, std::size_t k);

// Independence tester over a correlation matrix.
struct FisherZTest {
    Eigen::MatrixXd R;
    std::int64_t n = 0;   // records (the value width d)
    double alpha = 0.01;  // independent iff p > alpha
    double pvalue(int x, int y, const std::vector<int>& z) const {
        return fisher_z_pvalue(partial_correlation(R, x, y, z), n, z.size());
    }
    bool independent(int x, int y, const std::vector<int>& z) const {
        return pvalue(x, y, z) > alpha;
    }
};

// Edge marks at an endpoint: none (no edge), tail (-), arrowhead (>).
enum class Mark : std::uint8_t { none, tail, arrow };

struct CausalGraph {
    int n = 0;
    std::vector<Mark> mark;                // mark[i*n + j]: the mark at j on edge i - j
    std::vector<std::vector<int>> sepset;  // sepset[i*n + j] for removed edges
    std::vector<bool> separated;           // whether i and j were found independent
    std::vector<double> sep_pvalue;        // p-value of the test that removed the edge
    std::int64_t tests = 0;                // CI tests run
    int max_order = 0;                     // largest conditioning set size tried

    bool adjacent(int i, int j) const { return mark[i * n + j] != Mark::none; }
    Mark at(int i, int j) const { return mark[i * n + j]; }  // mark at j
    // i -> j
    bool directed(int i, int j) const { return at(i, j) == Mark::arrow && at(j, i) == Mark::tail; }
    bool undirected(int i, int j) const { return at(i, j) == Mark::tail && at(j, i) == Mark::tail; }
    std::vector<int> neighbours(int i) const;
    // Edges (i < j) as "i --- j", "i --> j", "i <-- j", "i <-> j".
    std::vector<std::string> edge_strings(const std::vector<std::string>& names) const;
};

struct PcOptions {
    int max_cond = -1;  // largest conditioning set size (-1: unbounded)
};

// PC-stable: skeleton by increasing conditioning order (adjacency sets frozen per order),
// v-structures x -> z <- y for non-adjacent x, y with z outside sepset(x, y) (two conflicting
// orientations leave a bidirected edge), then Meek rules R1-R3 until nothing changes.
CausalGraph pc_search(const FisherZTest& test, int nvars, const PcOptions& opt = {});

// DOT text of the graph; `names` label the nodes.
std::string to_dot(const CausalGraph& g, const std::vector<std::string>& names,
                   const std::string& title);

}  // namespace ternion::analysis
