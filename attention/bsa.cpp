// ternion.BSA, Bipolar Self-attention: Q, K = TSN(proj(x)) ternary; V = proj(x) analog;
// out = TSN(Shiftmax(Q K^T) |> V), per head. Shiftmax weights are powers of two, so the
// product with V is shift-and-add (docs/bsa.md gives the counts).
#include <algorithm>
#include <cmath>

#include "attention/spiking_attention.hpp"
#include "attention/spiking_attention_internal.hpp"

namespace ternion {

using spiking::Projection;
using spiking::TsnParams;
using spiking_detail::sz;

namespace {

// row = sum over keys j, ascending, of 2^-e[j] V_j (V_j: dh channels at v + j * D). Its own
// function so that the compiler knows row and V do not overlap and vectorises over channels.
void mix_row(const std::int32_t* e, const float* __restrict v, std::int64_t N, std::int64_t D,
             std::int64_t dh, float* __restrict row) {
    std::fill(row, row + dh, 0.0f);
    for (std::int64_t j = 0; j < N; ++j) {
        const float w = std::ldexp(1.0f, -e[j]);
        const float* vj = v + j * D;
        for (std::int64_t c = 0; c < dh; ++c) row[c] += w * vj[c];
    }
}

}  // namespace

struct BsaNode::State : NodeState {
    Buffers b;
    std::vector<float> hq, hk, hout;  // TSN states of Q, K and the output (V has no neuron)
    std::vector<std::int32_t> s;      // [N][N] integer scores of one head
    std::vector<std::int32_t> expo;   // [N][N] Shiftmax exponents of one head
    // Per channel lists of the tokens with a non-zero query / key, CSR: qstart [dh + 1],
    // kstart [dh + 1], qtok [N * dh], ktok [N * dh].
    std::vector<std::uint32_t> csr;
    std::vector<float> row;  // [dh] one output row of the value mixing
    KeptMaps maps;
};

BsaNode::BsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
                 TsnParams qk, TsnParams outp)
    : SpikingAttentionNode(std::move(name), "ternion.BSA", std::move(q), std::move(k), std::move(v),
                           heads),
      qk_(qk),
      out_(outp) {}

std::unique_ptr<NodeState> BsaNode::make_state() const {
    auto s = std::make_unique<State>();
    s->b = make_buffers();
    for (auto* h : {&s->hq, &s->hk, &s->hout}) h->assign(sz(tokens_ * dim_), 0.0f);
    s->s.assign(sz(tokens_ * tokens_), 0);
    s->expo.assign(sz(tokens_ * tokens_), 0);
    s->csr.assign(sz(tokens_ * head_dim_ * 2 + head_dim_ * 2 + 2), 0);
    s->row.assign(sz(head_dim_), 0.0f);
    return s;
}

bool BsaNode::reset_state(NodeState* state) const {
    auto& s = *static_cast<State*>(state);
    for (auto* h : {&s.hq, &s.hk, &s.hout}) std::fill(h->begin(), h->end(), 0.0f);
    s.maps.kept = false;
    return true;
}

bool BsaNode::membrane(const NodeState* state, std::vector<float>& out) const {
    auto* s = dynamic_cast<const State*>(state);
    if (!s) return false;
    out = s->hout;
    return true;
}

bool BsaNode::attention_maps(const NodeState* state, AttentionMaps& out) const {
    auto* s = dynamic_cast<const State*>(state);
    return s && export_maps(s->maps, out);
}

std::uint64_t BsaNode::neurons_per_step() const {
    return 3 * static_cast<std::uint64_t>(tokens_ * dim_);  // Q, K and output TSNs
}

void BsaNode::step(const Activity& in, NodeState* state, Activity& out,
                   const StepContext& ctx) const {
    auto& s = *static_cast<State*>(state);
    project(in, s.b, ctx);
    fire_qk(s, ctx);
    start_maps(s.maps, ctx.keep_attention);
    std::uint64_t score_acs = 0;
    for (std::int64_t h = 0; h < heads_; ++h) {
        score_acs += score_head(s, h, ctx.engine);
        shiftmax_mix(s, h);
    }
    book_shiftmax(score_acs, ctx);
    fire_output(s, out, ctx);
}

void BsaNode::fire_qk(State& s, const StepContext& ctx) const {
    const std::int64_t N = tokens_, D = dim_;
    Buffers& b = s.b;
    std::uint64_t nq = 0, nk = 0, nqn = 0, nkn = 0;
    for (std::int64_t n = 0; n < N; ++n) {
        const float* p = b.proj.data() + n * 3 * D;
        for (std::int64_t c = 0; c < D; ++c) {
            const auto i = sz(n * D + c);
            b.q[i] = spiking::tsn_step(s.hq[i], p[c], qk_);
            b.k[i] = spiking::tsn_step(s.hk[i], p[D + c], qk_);
            b.v[i] = p[2 * D + c];  // V stays a membrane potential
            nq += b.q[i] != 0.0f;
            nk += b.k[i] != 0.0f;
            nqn += b.q[i] < 0.0f;
            nkn += b.k[i] < 0.0f;
        }
    }
    book_neurons(ctx, 2 * sz(N * D));
    AttentionCounts& att = counts(ctx);
    att.q_spikes += nq;
    att.k_spikes += nk;
    att.q_neg_spikes += nqn;
    att.k_neg_spikes += nkn;
}

std::uint64_t BsaNode::score_head(State& s, std::int64_t h, Engine engine) const {
    // Accumulates: one per (non-zero query, non-zero key) pair of a channel, in both engines.
    const std::int64_t N = tokens_, D = dim_, dh = head_dim_, c0 = h * dh;
    const std::vector<float>&q = s.b.q, &k = s.b.k;
    std::int32_t* S = s.s.data();
    std::fill(S, S + N * N, 0);
    std::uint64_t acs = 0;
    if (engine == Engine::dense) {
        spiking_detail::dense_scores(q.data(), k.data(), N, D, c0, dh, S);
        for (std::int64_t c = 0; c < dh; ++c) {
            std::uint64_t a = 0, b = 0;
            for (std::int64_t n = 0; n < N; ++n) {
                a += q[sz(n * D + c0 + c)] != 0.0f;
                b += k[sz(n * D + c0 + c)] != 0.0f;
            }
            acs += a * b;
        }
        return acs;
    }
    std::uint32_t* qstart = s.csr.data();
    std::uint32_t* kstart = qstart + dh + 1;
    std::uint32_t* qtok = kstart + dh + 1;
    std::uint32_t* ktok = qtok + N * dh;
    std::uint32_t fq = 0, fk = 0;
    for (std::int64_t c = 0; c < dh; ++c) {
        qstart[c] = fq;
        kstart[c] = fk;
        for (std::int64_t n = 0; n < N; ++n) {
            if (q[sz(n * D + c0 + c)] != 0.0f) qtok[fq++] = static_cast<std::uint32_t>(n);
            if (k[sz(n * D + c0 + c)] != 0.0f) ktok[fk++] = static_cast<std::uint32_t>(n);
        }
    }
    qstart[dh] = fq;
    kstart[dh] = fk;
    // Ternary product: a (+-1, +-1) pair adds or subtracts one; zeros never reach here.
    for (std::int64_t c = 0; c < dh; ++c) {
        acs += std::uint64_t{qstart[c + 1] - qstart[c]} * (kstart[c + 1] - kstart[c]);
        for (std::uint32_t a = qstart[c]; a < qstart[c + 1]; ++a) {
            const std::int64_t i = qtok[a];
            const bool qpos = q[sz(i * D + c0 + c)] > 0.0f;
            std::int32_t* Si = S + i * N;
            for (std::uint32_t b = kstart[c]; b < kstart[c + 1]; ++b) {
                const std::int64_t j = ktok[b];
                const bool kpos = k[sz(j * D + c0 + c)] > 0.0f;
                Si[j] += qpos == kpos ? 1 : -1;
            }
        }
    }
    return acs;
}

void BsaNode::shiftmax_mix(State& s, std::int64_t h) const {
    // Shiftmax per query row, then the shift-and-add product with V in ascending key order:
    // every weight is 2^-n, so each product is exact and only the additions round.
    const std::int64_t N = tokens_, D = dim_, dh = head_dim_, c0 = h * dh;
    const std::int32_t* S = s.s.data();
    for (std::int64_t i = 0; i < N; ++i) {
        std::int32_t* e = s.expo.data() + i * N;
        spiking::shiftmax_exponents(S + i * N, N, e);
        if (s.maps.kept)  // for traces: integer scores and Shiftmax weights of this row
            for (std::int64_t j = 0; j < N; ++j) {
                s.maps.scores[sz((h * N + i) * N + j)] = static_cast<float>(S[i * N + j]);
                s.maps.weights[sz((h * N + i) * N + j)] = std::ldexp(1.0f, -e[j]);
            }
        mix_row(e, s.b.v.data() + c0, N, D, dh, s.row.data());
        std::copy(s.row.begin(), s.row.end(), s.b.y.begin() + i * D + c0);
    }
}

void BsaNode::book_shiftmax(std::uint64_t score_acs, const StepContext& ctx) const {
    // Shiftmax per row: n adds for the sum and n exponent subtractions, n shifts, n
    // comparisons (max search and leading-one detection); Shiftmax.V: one shift and one add
    // per (query, key, channel).
    const auto n = static_cast<std::uint64_t>(tokens_), d = static_cast<std::uint64_t>(head_dim_),
               h = static_cast<std::uint64_t>(heads_);
    AttentionCounts& att = counts(ctx);
    att.score_ac += score_acs;
    att.norm_ac += h * n * 2 * n;
    att.norm_shift += h * n * n;
    att.norm_cmp += h * n * n;
    att.mix_ac += h * n * n * d;
    att.mix_shift += h * n * n * d;
    if (!ctx.ops) return;
    ctx.ops->ac += score_acs + h * (n * 2 * n + n * n * d);
    ctx.ops->shift += h * (n * n + n * n * d);
    ctx.ops->cmp += h * n * n;
}

void BsaNode::fire_output(State& s, Activity& out, const StepContext& ctx) const {
    std::vector<float>& y = s.b.y;
    std::uint64_t neg = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        y[i] = spiking::tsn_step(s.hout[i], y[i], out_);
        neg += y[i] < 0.0f;
    }
    book_neurons(ctx, sz(tokens_ * dim_));
    counts(ctx).out_neg_spikes += neg;
    const auto spikes = emit(y, out);
    book_spikes(ctx, spikes);
}

}  // namespace ternion
