// Inter-modality flow (IMF; Xue et al., "Probing Inter-modality", NeurIPS 2021; see
// docs/analysis.md): the share of attention mass that crosses between token groups
// (e.g. image and text tokens). The paper's exact formula was not available: the definition
// here (cross-group mass / total mass of |A| over grouped tokens) is an assumption.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <string>
#include <vector>

namespace ternion::analysis {

struct TokenGroup {
    std::string name;
    std::vector<std::int64_t> tokens;  // sorted, distinct
};

// "NAME:RANGE,NAME:RANGE,..." where RANGE is "a", "a-b" (inclusive) or several joined by
// '+', e.g. "image:0-143,text:144-183". Needs >= 2 groups, disjoint, every index < ntokens;
// otherwise OptionError("groups", ...).
std::vector<TokenGroup> parse_groups(const std::string& spec, std::int64_t ntokens);

struct Flow {
    double imf = 0;         // cross-group share of the mass in [0, 1]; NaN if the mass is 0
    double mass = 0;        // sum of |A_ij| over grouped i, j
    Eigen::MatrixXd share;  // share(g, h): mass from rows of group g to columns of group h / mass
};

// IMF of one rows x cols map (row-major); rows are queries, columns keys.
Flow inter_modality_flow(const float* A, std::int64_t rows, std::int64_t cols,
                         const std::vector<TokenGroup>& groups);

}  // namespace ternion::analysis
