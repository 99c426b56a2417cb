// ternion.BSA, Bipolar Self-attention: Q, K = TSN(proj(x)) ternary; V = proj(x) analog;
// out = TSN(Shiftmax(Q K^T) |> V), per head. Shiftmax weights are powers of two, so the
// product with V is shift-and-add (docs/bsa.md gives the counts).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "attention/spiking/spiking_attention.hpp"
#include "attention/spiking/spiking_attention_internal.hpp"
#include "sim/simd/simd.hpp"

namespace ternion {

using spiking_detail::sz;

namespace {

// 2^-e exactly, as std::ldexp(1.0f, -e) gives it (e >= 0): the bit pattern where the result is
// a normal float, the library below that.
float pow2_neg(std::int32_t e) {
    if (e <= 126) return std::bit_cast<float>(static_cast<std::uint32_t>(127 - e) << 23);
    return std::ldexp(1.0f, -e);
}

}  // namespace

struct BsaNode::State : NodeState {
    Buffers b;
    std::vector<float> hq, hk, hout;         // TSN states of Q, K and the output (V has no neuron)
    std::vector<std::int32_t> s;             // [N][N] integer scores of one head
    std::vector<std::int32_t> expo;          // [N] Shiftmax exponents of one query row
    std::vector<float> kt;                   // [dh][N rounded up to 16] one head's keys, transposed
    std::vector<std::uint32_t> nq, nk;       // non-zero queries and keys per channel of one head
    std::vector<float> wts;                  // [N][N] Shiftmax weights 2^-n of one head
    std::vector<std::int32_t> iq, ik, iout;  // integer form: the TSN membranes
    std::vector<std::int32_t> vi;            // integer form: [N][D] the V register
    std::vector<std::int32_t> acc;           // integer form: [dh] one row's sums
    std::vector<std::int32_t> keys;          // integer form: [2N] a row's keys within the cap,
                                             // then their shifts
    KeptMaps maps;
};

BsaNode::BsaNode(std::string name, Projection q, Projection k, Projection v, std::int64_t heads,
                 kernels::Tsn qk, kernels::Tsn outp)
    : SpikingAttentionNode(std::move(name), "ternion.BSA", std::move(q), std::move(k), std::move(v),
                           heads),
      qk_(qk),
      out_(outp) {
    closed_form_ = AttentionClosedForm::ternary_shiftmax;
    spiking_v_ = false;  // V stays a membrane potential
}

std::unique_ptr<NodeState> BsaNode::make_state() const {
    auto s = std::make_unique<State>();
    s->b = make_buffers();
    for (auto* h : {&s->hq, &s->hk, &s->hout}) h->assign(sz(tokens_ * dim_), 0.0f);
    s->s.assign(sz(tokens_ * tokens_), 0);
    s->expo.assign(sz(tokens_), 0);
    s->kt.assign(sz(head_dim_ * ((tokens_ + 15) / 16 * 16)), 0.0f);
    s->nq.assign(sz(head_dim_), 0);
    s->nk.assign(sz(head_dim_), 0);
    s->wts.assign(sz(tokens_ * tokens_), 0.0f);
    if (fixed_) {
        for (auto* h : {&s->iq, &s->ik, &s->iout, &s->vi}) h->assign(sz(tokens_ * dim_), 0);
        s->acc.assign(sz(head_dim_), 0);
        s->keys.assign(sz(2 * tokens_), 0);
    }
    return s;
}

bool BsaNode::reset_state(NodeState* state) const {
    auto& s = *static_cast<State*>(state);
    for (auto* h : {&s.hq, &s.hk, &s.hout}) std::fill(h->begin(), h->end(), 0.0f);
    for (auto* h : {&s.iq, &s.ik, &s.iout}) std::fill(h->begin(), h->end(), 0);
    s.maps.kept = false;
    return true;
}

bool BsaNode::membrane(const NodeState* state, std::vector<float>& out) const {
    return fixed_ ? membrane_of(state, &State::iout, out) : membrane_of(state, &State::hout, out);
}

bool BsaNode::attention_maps(const NodeState* state, AttentionMaps& out) const {
    return maps_of<State>(state, out);
}

void BsaNode::step(const Activity& in, NodeState* state, Activity& out,
                   const StepContext& ctx) const {
    auto& s = *static_cast<State*>(state);
    project(in, s.b, ctx);
    if (fixed_)
        fire_qk_fixed(s, ctx);
    else
        fire_qk(s, ctx);
    start_maps(s.maps, ctx.keep_attention);
    std::uint64_t score_acs = 0, over = 0;
    for (std::int64_t h = 0; h < heads_; ++h) {
        score_acs += score_head(s, h, ctx.engine);
        if (fixed_)
            over += shiftmax_mix_fixed(s, h);
        else
            shiftmax_mix(s, h);
    }
    book_overflows(ctx, over);
    book_shiftmax(score_acs, ctx);
    fire_output(s, out, ctx);
}

void BsaNode::fire_qk(State& s, const StepContext& ctx) const {
    simd::at_level([&] {
        const std::int64_t N = tokens_, D = dim_;
        Buffers& b = s.b;
        std::uint64_t nq = 0, nk = 0, nqn = 0, nkn = 0;
        for (std::int64_t n = 0; n < N; ++n) {
            const float* p = b.proj.data() + n * 3 * D;
            float *q = b.q.data() + n * D, *k = b.k.data() + n * D;
            float *hq = s.hq.data() + n * D, *hk = s.hk.data() + n * D;
            kernels::tsn_row(qk_, hq, p, q, D);
            kernels::tsn_row(qk_, hk, p + D, k, D);
            std::copy(p + 2 * D, p + 3 * D, b.v.data() + n * D);  // V stays a membrane potential
            for (std::int64_t c = 0; c < D; ++c) {
                nq += q[c] != 0.0f;
                nk += k[c] != 0.0f;
                nqn += q[c] < 0.0f;
                nkn += k[c] < 0.0f;
            }
        }
        book_qk(ctx, nq, nk, nqn, nkn);
    });
}

void BsaNode::book_qk(const StepContext& ctx, std::uint64_t nq, std::uint64_t nk,
                      std::uint64_t nq_neg, std::uint64_t nk_neg) const {
    book_neurons(ctx, 2 * sz(tokens_ * dim_));
    AttentionCounts& att = counts(ctx);
    att.q_spikes += nq;
    att.k_spikes += nk;
    att.q_neg_spikes += nq_neg;
    att.k_neg_spikes += nk_neg;
}

std::uint64_t BsaNode::score_head(State& s, std::int64_t h, Engine engine) const {
    const std::int64_t N = tokens_, D = dim_, dh = head_dim_, c0 = h * dh;
    const std::vector<float>&q = s.b.q, &k = s.b.k;
    std::int32_t* S = s.s.data();
    std::fill(S, S + N * N, 0);
    if (engine == Engine::dense) {
        std::uint64_t acs = 0;
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
    const std::uint64_t pairs = head_keys(s, h);
    score_pairs(s, h, S);
    return pairs;
}

std::uint64_t BsaNode::head_keys(State& s, std::int64_t h) const {
    const std::int64_t N = tokens_, D = dim_, dh = head_dim_, c0 = h * dh;
    const std::int64_t np = (N + 15) / 16 * 16;
    std::fill(s.nq.begin(), s.nq.end(), 0);
    std::fill(s.nk.begin(), s.nk.end(), 0);
    for (std::int64_t n = 0; n < N; ++n) {
        const float* qn = s.b.q.data() + n * D + c0;
        const float* kn = s.b.k.data() + n * D + c0;
        for (std::int64_t c = 0; c < dh; ++c) {  // branch-free: spikes are unpredictable
            s.nq[sz(c)] += qn[c] != 0.0f;
            s.nk[sz(c)] += kn[c] != 0.0f;
            s.kt[sz(c * np + n)] = kn[c];
        }
    }
    // Accumulates: one per (non-zero query, non-zero key) pair of a channel, in both engines.
    std::uint64_t acs = 0;
    for (std::int64_t c = 0; c < dh; ++c) acs += std::uint64_t{s.nq[sz(c)]} * s.nk[sz(c)];
    return acs;
}

// S_ij = sum over the head's channels of Q_ic K_jc, every term -1, 0 or +1: exact in floats
// in any order (|S| <= dh), so the products run as vectors of 16 keys against 4 queries at a
// time, with the keys transposed (s.kt, zero past N).
void BsaNode::score_pairs(State& s, std::int64_t h, std::int32_t* S) const {
    const std::int64_t N = tokens_, D = dim_, dh = head_dim_, np = (N + 15) / 16 * 16;
    const float* q = s.b.q.data() + h * dh;
    const auto scores = simd::kernels().bsa_scores;
    std::int64_t i = 0;
    for (; i + 4 <= N; i += 4) scores(q + i * D, D, 4, s.kt.data(), np, N, dh, S + i * N);
    for (; i < N; ++i) scores(q + i * D, D, 1, s.kt.data(), np, N, dh, S + i * N);
}

void BsaNode::shiftmax_mix(State& s, std::int64_t h) const {
    // Shiftmax per query row, then the shift-and-add product with V in ascending key order:
    // every weight is 2^-n, so each product is exact and only the additions round.
    const std::int64_t N = tokens_, D = dim_, dh = head_dim_, c0 = h * dh;
    const std::int32_t* S = s.s.data();
    for (std::int64_t i = 0; i < N; ++i) {
        std::int32_t* e = s.expo.data();
        float* w = s.wts.data() + i * N;
        spiking::shiftmax_exponents(S + i * N, N, e);
        for (std::int64_t j = 0; j < N; ++j) w[j] = pow2_neg(e[j]);
        if (s.maps.kept)  // for traces: integer scores and Shiftmax weights of this row
            for (std::int64_t j = 0; j < N; ++j) {
                s.maps.scores[sz((h * N + i) * N + j)] = static_cast<float>(S[i * N + j]);
                s.maps.weights[sz((h * N + i) * N + j)] = w[j];
            }
    }
    const float* v = s.b.v.data() + c0;
    float* y = s.b.y.data() + c0;
    const auto mix = simd::kernels().bsa_mix;
    std::int64_t i = 0;
    const auto rows = [&](std::int64_t r) { return s.wts.data() + (i + r) * N; };
    for (; i + 4 <= N; i += 4) {
        const float* w[4] = {rows(0), rows(1), rows(2), rows(3)};
        mix(w, 4, v, N, D, dh, y + i * D, D);
    }
    for (; i < N; ++i) {
        const float* w[1] = {rows(0)};
        mix(w, 1, v, N, D, dh, y + i * D, D);
    }
}

void BsaNode::fire_qk_fixed(State& s, const StepContext& ctx) const {
    const std::int64_t N = tokens_, D = dim_;
    Buffers& b = s.b;
    const FixedAttention& f = *fixed_;
    std::uint64_t over = f.q.step_rows(s.iq.data(), b.proj.data(), 3 * D, b.q.data(), N, D) +
                         f.k.step_rows(s.ik.data(), b.proj.data() + D, 3 * D, b.k.data(), N, D);
    // V: the projection's integer sum, shifted into its register; then the spike counts.
    std::uint64_t nq = 0, nk = 0, nqn = 0, nkn = 0;
    simd::at_level([&] {
        const std::int64_t hi = f.value.max(), lo = -hi - 1;
        const int vs = f.value_shift;
        std::uint64_t hits = 0;
        for (std::int64_t n = 0; n < N; ++n) {
            const float* p = b.proj.data() + n * 3 * D + 2 * D;
            std::int32_t* vi = s.vi.data() + n * D;
            float* v = b.v.data() + n * D;
            for (std::int64_t c = 0; c < D; ++c) {
                const std::int64_t x = fixed::input_int(p[c]) * (std::int64_t{1} << vs);
                const std::int64_t r = std::max(lo, std::min(hi, x));
                hits += r != x;
                vi[c] = static_cast<std::int32_t>(r);
                v[c] = static_cast<float>(r);
            }
        }
        over += hits;
        for (std::size_t i = 0; i < b.q.size(); ++i) {
            nq += b.q[i] != 0.0f;
            nk += b.k[i] != 0.0f;
            nqn += b.q[i] < 0.0f;
            nkn += b.k[i] < 0.0f;
        }
    });
    book_overflows(ctx, over);
    book_qk(ctx, nq, nk, nqn, nkn);
}

// Row i of head h: sum_j (V_j >> n_ij) over the keys whose shift is within the cap, in
// ascending key order, exact in int32 (the weights 2^-n sum to at most 1, so |sum| <= max |V| +
// N), then held in the accumulator. The sums run 16 channels at a time in registers across the
// row's keys (one vector at AVX-512, two at AVX2); a narrower tail goes through memory.
namespace {

template <bool TowardZero>
inline std::int32_t shifted(std::int32_t v, int n) {
    if constexpr (TowardZero) return v >= 0 ? v >> n : -((-v) >> n);
    return v >> n;
}

// 8 int32 lanes as one value (GCC's vector extension): the running sums stay in registers (two
// ymm for 16 channels; a 64-byte type would live on the stack at AVX2), each key's shift one
// vector shift by a scalar.
using I32x8 = std::int32_t __attribute__((vector_size(32)));

template <bool TowardZero>
void shift_sums(const std::int32_t* vi, std::int64_t D, const std::int32_t* kj,
                const std::int32_t* ks, std::int64_t nk, std::int64_t width, std::int32_t* out) {
    std::int64_t c0 = 0;
    for (; c0 + 16 <= width; c0 += 16) {
        I32x8 a = {}, b = {};
        for (std::int64_t t = 0; t < nk; ++t) {
            I32x8 v, w;
            const std::int32_t* p = vi + kj[t] * D + c0;
            std::memcpy(&v, p, sizeof v);
            std::memcpy(&w, p + 8, sizeof w);
            const int n = ks[t];
            if constexpr (TowardZero) {  // the magnitude shifted, the sign (0 or -1) restored
                const I32x8 mv = v >> 31, mw = w >> 31;
                a += ((((v ^ mv) - mv) >> n) ^ mv) - mv;
                b += ((((w ^ mw) - mw) >> n) ^ mw) - mw;
            } else {
                a += v >> n;
                b += w >> n;
            }
        }
        std::memcpy(out + c0, &a, sizeof a);
        std::memcpy(out + c0 + 8, &b, sizeof b);
    }
    for (std::int64_t c = c0; c < width; ++c) out[c] = 0;
    for (std::int64_t t = 0; t < nk && c0 < width; ++t) {
        const std::int32_t* v = vi + kj[t] * D;
        for (std::int64_t c = c0; c < width; ++c) out[c] += shifted<TowardZero>(v[c], ks[t]);
    }
}

}  // namespace

std::uint64_t BsaNode::shiftmax_mix_fixed(State& s, std::int64_t h) const {
    std::uint64_t over = 0;
    simd::at_level([&] {
        const std::int64_t N = tokens_, D = dim_, dh = head_dim_, c0 = h * dh;
        const FixedAttention& f = *fixed_;
        const std::int32_t* S = s.s.data();
        std::int32_t *kj = s.keys.data(), *ks = s.keys.data() + N;
        for (std::int64_t i = 0; i < N; ++i) {
            std::int32_t* e = s.expo.data();
            spiking::shiftmax_exponents(S + i * N, N, e);
            if (s.maps.kept)
                for (std::int64_t j = 0; j < N; ++j) {
                    s.maps.scores[sz((h * N + i) * N + j)] = static_cast<float>(S[i * N + j]);
                    s.maps.weights[sz((h * N + i) * N + j)] = pow2_neg(e[j]);
                }
            std::int64_t nk = 0;  // the keys within the cap, ascending, with their shifts
            for (std::int64_t j = 0; j < N; ++j)
                if (e[j] <= f.shift_cap) {
                    kj[nk] = static_cast<std::int32_t>(j);
                    ks[nk++] = e[j];
                }
            std::int32_t* acc = s.acc.data();
            if (f.shift_toward_zero)
                shift_sums<true>(s.vi.data() + c0, D, kj, ks, nk, dh, acc);
            else
                shift_sums<false>(s.vi.data() + c0, D, kj, ks, nk, dh, acc);
            float* y = s.b.y.data() + i * D + c0;
            for (std::int64_t c = 0; c < dh; ++c) y[c] = static_cast<float>(fit_acc(acc[c], over));
        }
    });
    return over;
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
    if (fixed_) {
        const std::int64_t n = tokens_ * dim_;
        book_overflows(ctx, fixed_->mix.step(s.iout.data(), s.b.y.data(), s.b.z.data(), n));
        std::uint64_t neg = 0;
        for (float x : s.b.z) neg += x < 0.0f;
        book_neurons(ctx, sz(n));
        counts(ctx).out_neg_spikes += neg;
        std::uint64_t spikes = 0;
        simd::at_level([&] { spikes = emit(s.b.z, out); });
        book_spikes(ctx, spikes);
        return;
    }
    simd::at_level([&] {
        std::vector<float>& y = s.b.y;
        std::uint64_t neg = 0;
        for (std::size_t i = 0; i < y.size(); ++i) {
            y[i] = kernels::tsn_step(out_, s.hout[i], y[i]);
            neg += y[i] < 0.0f;
        }
        book_neurons(ctx, sz(tokens_ * dim_));
        counts(ctx).out_neg_spikes += neg;
        const auto spikes = emit(y, out);
        book_spikes(ctx, spikes);
    });
}

}  // namespace ternion
