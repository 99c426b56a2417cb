// ternion.SSA, ternion.SDSA and ternion.BSA nodes: dense hand computations, closed-form op
// counts on hand-made spike patterns, event vs dense engines, SSA's two associations.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "attention/spiking/spiking_attention.hpp"

using namespace ternion;
using Tsn = kernels::Tsn;

namespace {

// An attention LIF (hard reset, fires on >=) in the old positional order of its parameters.
kernels::SjLif make_lif(float tau = 2.0f, bool decay_input = true, float v_threshold = 1.0f,
                        float v_reset = 0.0f) {
    return {kernels::SjLifCharge::from_tau(tau, decay_input, v_reset, v_reset == 0.0f),
            v_threshold};
}

Projection identity(std::int64_t d) {
    std::vector<float> w(d * d, 0.0f);
    for (std::int64_t i = 0; i < d; ++i) w[i * d + i] = 1.0f;
    return Projection(w, {}, d, d);
}

struct RandW {
    std::vector<float> w, b;
};
RandW rand_w(std::mt19937& rng, std::int64_t out, std::int64_t in, float scale, float bias) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    RandW r{std::vector<float>(out * in), std::vector<float>(out)};
    for (auto& x : r.w) x = nd(rng) * scale;
    for (auto& x : r.b) x = bias + 0.3f * nd(rng);
    return r;
}

Activity act(const std::vector<float>& v) {
    Activity a;
    a.values = v;
    a.scan();
    return a;
}

// One step with fresh op counters and attention break-down.
struct Stepper {
    const Node& node;
    std::unique_ptr<NodeState> st;
    Activity out;
    OpCounts ops;
    AttentionCounts att;
    Stepper(const Node& n) : node(n), st(n.make_state()) { out.resize(n.out_size()); }
    const Activity& run(const Activity& in, Engine e, std::int64_t t = 0) {
        ops = {};
        att = {};
        StepContext ctx;
        ctx.engine = e;
        ctx.step = t;
        ctx.ops = &ops;
        ctx.attention = &att;
        node.step(in, st.get(), out, ctx);
        return out;
    }
};

// SpikingJelly's LIF at tau 2 with decay_input, hard reset to 0, written out.
float reference_lif(float& h, float x, float vth) {
    h = h + (x - h) / 2.0f;
    if (h >= vth) {
        h = 0;
        return 1.0f;
    }
    return 0.0f;
}

// Q, K, V spikes of one step, computed densely: x [N][Din] through the three linear maps into
// LIFs (threshold 1) with membranes hq, hk, hv.
void reference_qkv(const std::vector<float>& x, const RandW& q, const RandW& k, const RandW& v,
                   std::int64_t N, std::int64_t Din, std::int64_t D, std::vector<float>& hq,
                   std::vector<float>& hk, std::vector<float>& hv, std::vector<float>& Q,
                   std::vector<float>& K, std::vector<float>& V) {
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t o = 0; o < D; ++o) {
            float a = q.b[o], b = k.b[o], c = v.b[o];
            for (std::int64_t i = 0; i < Din; ++i) {
                a += x[n * Din + i] * q.w[o * Din + i];
                b += x[n * Din + i] * k.w[o * Din + i];
                c += x[n * Din + i] * v.w[o * Din + i];
            }
            Q[n * D + o] = reference_lif(hq[n * D + o], a, 1.0f);
            K[n * D + o] = reference_lif(hk[n * D + o], b, 1.0f);
            V[n * D + o] = reference_lif(hv[n * D + o], c, 1.0f);
        }
}

const kernels::SjLif kFireOnOne =
    make_lif(2.0f, true, 0.5f, 0.0f);  // input 1 -> v = 0.5 -> spike, reset

// SSA against a dense hand computation: output spikes, Q spike counts, and the accumulates of
// the association taken per head (the cheaper one unless `assoc` forces one), counted here from
// the spike tensors themselves. Returns how many (head, step) pairs took Q K^T first and how
// many K^T V first.
std::pair<std::uint64_t, std::uint64_t> check_ssa(
    std::int64_t N, std::int64_t Din, std::int64_t D, std::int64_t H, std::int64_t T,
    std::uint32_t seed, float bias, SsaAssociation assoc = SsaAssociation::automatic) {
    std::mt19937 rng(seed);
    const std::int64_t dh = D / H;
    auto q = rand_w(rng, D, Din, 0.8f, bias), k = rand_w(rng, D, Din, 0.8f, bias),
         v = rand_w(rng, D, Din, 0.8f, bias);
    SsaNode node("ssa", Projection(q.w, q.b, D, Din), Projection(k.w, k.b, D, Din),
                 Projection(v.w, v.b, D, Din), H, make_lif(), make_lif(2.0f, true, 0.5f, 0.0f),
                 0.125f, assoc);
    node.bind({N, Din});
    CHECK(node.out_shape() == Shape{N, D});
    Stepper s(node);
    std::vector<float> hq(N * D, 0), hk(N * D, 0), hv(N * D, 0), ha(N * D, 0);
    auto lif = reference_lif;
    std::uint64_t total_spikes = 0, qk_steps = 0, kv_steps = 0;
    for (std::int64_t t = 0; t < T; ++t) {
        std::vector<float> x(N * Din);
        std::uint64_t nx = 0;
        for (auto& e : x) nx += (e = (rng() % 2) ? 1.0f : 0.0f) != 0.0f;
        std::vector<float> Q(N * D), K(N * D), V(N * D);
        reference_qkv(x, q, k, v, N, Din, D, hq, hk, hv, Q, K, V);
        std::vector<float> expect(N * D);
        std::uint64_t acs = 3 * nx * std::uint64_t(D);  // every weight is non-zero
        std::uint64_t qk_heads = 0;  // heads where Q K^T first is no dearer (ties go to it)
        for (std::int64_t h = 0; h < H; ++h) {
            auto at = [&](const std::vector<float>& m, std::int64_t n, std::int64_t c) {
                return m[n * D + h * dh + c] != 0.0f;
            };
            for (std::int64_t i = 0; i < N; ++i)
                for (std::int64_t c = 0; c < dh; ++c) {
                    double y = 0;  // (Q K^T) V of head h
                    for (std::int64_t j = 0; j < N; ++j) {
                        double a = 0;
                        for (std::int64_t e = 0; e < dh; ++e)
                            a += Q[i * D + h * dh + e] * K[j * D + h * dh + e];
                        y += a * V[j * D + h * dh + c];
                    }
                    expect[i * D + h * dh + c] =
                        lif(ha[i * D + h * dh + c], float(y * 0.125), 0.5f);
                }
            // (Q K^T) V: a (Q, K) pair per coincident channel, then V_j's spikes for every
            // non-zero score; Q (K^T V): a (K, V) pair per token, then Q's spikes times the
            // non-zero entries of their K^T V row.
            std::uint64_t qk = 0, kv = 0;
            for (std::int64_t i = 0; i < N; ++i)
                for (std::int64_t j = 0; j < N; ++j) {
                    std::uint64_t both = 0, vj = 0;
                    for (std::int64_t c = 0; c < dh; ++c) {
                        both += at(Q, i, c) && at(K, j, c);
                        vj += at(V, j, c);
                    }
                    qk += both + (both ? vj : 0);
                }
            for (std::int64_t j = 0; j < N; ++j) {
                std::uint64_t kj = 0, vj = 0;
                for (std::int64_t c = 0; c < dh; ++c) kj += at(K, j, c), vj += at(V, j, c);
                kv += kj * vj;
            }
            for (std::int64_t c = 0; c < dh; ++c) {
                std::uint64_t qc = 0, row = 0;
                for (std::int64_t i = 0; i < N; ++i) qc += at(Q, i, c);
                for (std::int64_t c2 = 0; c2 < dh; ++c2) {
                    bool any = false;
                    for (std::int64_t j = 0; j < N; ++j) any = any || (at(K, j, c) && at(V, j, c2));
                    row += any;
                }
                kv += qc * row;
            }
            const bool qk_first = assoc == SsaAssociation::qk_first ||
                                  (assoc == SsaAssociation::automatic && qk <= kv);
            acs += qk_first ? qk : kv;
            qk_heads += qk_first;
        }
        const auto& out = s.run(act(x), Engine::event, t);
        CHECK(out.values == expect);
        total_spikes += out.active.size();
        std::uint64_t nq = 0;
        for (float e : Q) nq += e != 0;
        CHECK(s.att.q_spikes == nq);
        CHECK(s.ops.ac == acs);
        CHECK(s.att.qk_first_heads == qk_heads);
        CHECK(s.att.kv_first_heads == std::uint64_t(H) - qk_heads);
        qk_steps += qk_heads;
        kv_steps += std::uint64_t(H) - qk_heads;
    }
    CHECK(total_spikes > 0);
    return {qk_steps, kv_steps};
}

}  // namespace

TEST_CASE("SSA equals a dense hand computation over several steps") {
    check_ssa(5, 6, 4, 2, 4, 11, 2.2f);
}

TEST_CASE("SSA beyond one mask word: 70 tokens, 66 channels per head, both associations") {
    // Token and channel bit masks span two 64-bit words each. These spikes make K^T V first
    // the cheaper order, so Q K^T first is also forced to run its product over the masks.
    const auto [qk, kv] = check_ssa(70, 8, 132, 2, 3, 12, 0.6f);
    CHECK(qk == 0);
    CHECK(kv == 6);
    const auto [qk_forced, kv_forced] =
        check_ssa(70, 8, 132, 2, 3, 12, 0.6f, SsaAssociation::qk_first);
    CHECK(qk_forced == 6);
    CHECK(kv_forced == 0);
}

TEST_CASE("SSA closed-form counts: all-ones and single-token patterns; associations agree") {
    const std::int64_t N = 6, D = 8, H = 2, dh = 4;
    auto make = [&](SsaAssociation a) {
        auto n = std::make_unique<SsaNode>("ssa", identity(D), identity(D), identity(D), H,
                                           kFireOnOne, make_lif(2.0f, true, 0.5f, 0.0f), 0.125f, a);
        n->bind({N, D});
        return n;
    };
    auto autom = make(SsaAssociation::automatic), qk = make(SsaAssociation::qk_first),
         kv = make(SsaAssociation::kv_first);
    Stepper sa(*autom), sq(*qk), sk(*kv);
    // All ones: QK-first costs 2 N^2 dh per head, KV-first 2 N dh^2: auto takes KV (N > dh).
    auto ones = act(std::vector<float>(N * D, 1.0f));
    const auto& o1 = sa.run(ones, Engine::event);
    CHECK(sa.ops.ac == std::uint64_t(3 * N * D + H * 2 * N * dh * dh));  // 144 + 384
    CHECK(sa.ops.mac == 0);
    CHECK(sa.ops.neuron_update == std::uint64_t(4 * N * D));
    CHECK(sa.ops.cmp == std::uint64_t(4 * N * D));
    CHECK(sa.ops.weight_read_bytes == std::uint64_t(4 * 3 * N * D));
    CHECK(sa.att.q_spikes == std::uint64_t(N * D));
    CHECK(sa.att.v_spikes == std::uint64_t(N * D));
    CHECK(sa.att.qk_first_heads == 0);  // qk-first heads
    CHECK(sa.att.kv_first_heads == std::uint64_t(H));
    // By stage: the projections reach one weight per input spike in each of Q, K, V; K^T V and
    // then Q (K^T V) each cost N dh^2 per head when everything fires.
    CHECK(sa.att.proj_ac == std::uint64_t(3 * N * D));
    CHECK(sa.att.score_ac == std::uint64_t(H * N * dh * dh));
    CHECK(sa.att.mix_ac == std::uint64_t(H * N * dh * dh));
    CHECK(o1.active.size() == std::uint64_t(N * D));  // y = N dh / 8 = 3 -> v = 1.5 fires
    CHECK(sa.ops.spikes_out == std::uint64_t(N * D));
    sq.run(ones, Engine::event);
    sk.run(ones, Engine::event);
    CHECK(sq.ops.ac == std::uint64_t(3 * N * D + H * 2 * N * N * dh));
    CHECK(sk.ops.ac == sa.ops.ac);
    CHECK(sq.out.values == o1.values);
    CHECK(sk.out.values == o1.values);
    // Only token 0 fires (on every channel): QK-first = dh + dh per head, KV-first = 2 dh^2.
    std::vector<float> x(N * D, 0.0f);
    std::fill(x.begin(), x.begin() + D, 1.0f);
    sa.run(act(x), Engine::event, 1);
    CHECK(sa.ops.ac == std::uint64_t(3 * D + H * 2 * dh));
    CHECK(sa.att.qk_first_heads == std::uint64_t(H));
    CHECK(sa.out.active.empty());  // y = 4/8 = 0.5 after a spike-reset: v = 0.25 < 0.5
    std::vector<float> mem;
    CHECK(autom->membrane(sa.st.get(), mem));
    CHECK(mem[0] == 0.25f);
    CHECK(mem[D] == 0.0f);
}

TEST_CASE("SDSA: column sum of Q.K masks V's channels; closed-form counts") {
    const std::int64_t N = 6, D = 8;
    SdsaNode node("sdsa", identity(D), identity(D), identity(D), 2, kFireOnOne,
                  make_lif(2.0f, true, 0.5f, 0.0f));
    node.bind({N, D});
    Stepper s(node);
    // Channel c is active in c tokens (tokens 0..c-1): column sum c -> mask LIF v = c/2.
    std::vector<float> x(N * D, 0.0f);
    for (std::int64_t c = 0; c < D; ++c)
        for (std::int64_t n = 0; n < std::min(c, N); ++n) x[n * D + c] = 1.0f;
    const auto& out = s.run(act(x), Engine::event);
    std::uint64_t nz = 0;
    for (float e : x) nz += e != 0;
    CHECK(s.ops.ac == 3 * nz + nz);  // projections + one add per coincident Q,K spike
    CHECK(s.ops.neuron_update == std::uint64_t(3 * N * D + D));
    CHECK(s.att.mask_channels == std::uint64_t(D - 1));  // channels 1..7 open (v = c/2 >= 0.5)
    // Output = V on the open channels = x (channel 0 carries no V spikes anyway).
    CHECK(out.values == x);
    CHECK(s.ops.spikes_out == nz);
    // Next step: token 0 fires on channel 1, token 1 on channel 2. Every mask neuron that
    // fired was reset, so each column sum of 1 gives v = 0.5: channels 1 and 2 open, V passes.
    std::vector<float> y(N * D, 0.0f);
    y[1] = 1.0f;
    y[D + 2] = 1.0f;
    const auto& out2 = s.run(act(y), Engine::event, 1);
    CHECK(out2.active == ternion::IndexList{1, static_cast<std::uint32_t>(D + 2)});
    CHECK(s.att.mask_channels == 2);
    CHECK(s.ops.ac == 3 * 2 + 2);
}

TEST_CASE("projection counts: spikes and integers cost ACs (|x| each), analog values MACs") {
    const std::int64_t N = 2, D = 4;
    std::vector<float> w(D * D, 0.0f);
    w[0 * D + 0] = 1;  // input 0 reaches one Q weight
    w[1 * D + 2] = 1;  // input 2 reaches two Q weights
    w[3 * D + 2] = -1;
    SsaNode node("ssa", Projection(w, {}, D, D), identity(D), identity(D), 1, make_lif(),
                 make_lif(), 0.125f, SsaAssociation::automatic);
    node.bind({N, D});
    Stepper s(node);
    // token 0: (2, 0, -2, 0); token 1 silent. Fan of input 0: 1 + 1 + 1, of input 2: 2 + 1 + 1.
    s.run(act({2, 0, -2, 0, 0, 0, 0, 0}), Engine::event);
    // Q fires on channels 0 and 3 of token 0, K and V on channel 0: (QK^T)V costs 1 + 1.
    CHECK(s.ops.ac == 2 * 3 + 2 * 4 + 2);
    CHECK(s.ops.mac == 0);
    CHECK(s.ops.weight_read_bytes == 4 * (3 + 4));
    s.run(act({0.5f, 0, -2, 0, 0, 0, 0, 0}), Engine::event, 1);
    CHECK(s.ops.mac == 3 + 4);  // one analog value makes the whole input analog
    CHECK(s.ops.weight_read_bytes == 4 * (3 + 4));
}

// SDSA against a dense hand computation over several steps, in the paper's form (mask from
// Q (.) K applied to V) or the official code's (mask from K (.) V applied to Q).
static void check_sdsa(SdsaForm form) {
    std::mt19937 rng(14);
    const bool kv = form == SdsaForm::kv_first;
    const std::int64_t N = 7, Din = 5, D = 6, T = 5;
    auto q = rand_w(rng, D, Din, 0.8f, 1.6f), k = rand_w(rng, D, Din, 0.8f, 1.6f),
         v = rand_w(rng, D, Din, 0.8f, 1.6f);
    SdsaNode node("sdsa", Projection(q.w, q.b, D, Din), Projection(k.w, k.b, D, Din),
                  Projection(v.w, v.b, D, Din), 3, make_lif(), make_lif(2.0f, true, 2.0f, 0.0f),
                  form);
    node.bind({N, Din});
    Stepper s(node);
    std::vector<float> hq(N * D, 0), hk(N * D, 0), hv(N * D, 0), hm(D, 0);
    auto lif = reference_lif;
    std::uint64_t spikes = 0, open = 0, pairs = 0;
    for (std::int64_t t = 0; t < T; ++t) {
        std::vector<float> x(N * Din);
        for (auto& e : x) e = (rng() % 2) ? 1.0f : 0.0f;
        std::vector<float> Q(N * D), K(N * D), V(N * D);
        reference_qkv(x, q, k, v, N, Din, D, hq, hk, hv, Q, K, V);
        std::vector<float> expect(N * D);
        for (std::int64_t c = 0; c < D; ++c) {
            float col = 0;  // SUM over tokens of Q (.) K, or of K (.) V
            for (std::int64_t n = 0; n < N; ++n)
                col += kv ? K[n * D + c] * V[n * D + c] : Q[n * D + c] * K[n * D + c];
            pairs += static_cast<std::uint64_t>(col);
            const float m = lif(hm[c], col, 2.0f);
            open += m != 0;
            for (std::int64_t n = 0; n < N; ++n)
                expect[n * D + c] = m * (kv ? Q[n * D + c] : V[n * D + c]);
        }
        const auto& out = s.run(act(x), Engine::event, t);
        CHECK(out.values == expect);
        CHECK(s.att.score_ac == pairs);
        pairs = 0;
        spikes += out.active.size();
    }
    CHECK(spikes > 0);
    CHECK(open > 0);
    CHECK(open < std::uint64_t(T * D));  // the mask closed some channels too
}

TEST_CASE("SDSA equals a dense hand computation: the paper's Q.K form") {
    check_sdsa(SdsaForm::qk_first);
}

TEST_CASE("SDSA equals a dense hand computation: the official code's K.V form") {
    check_sdsa(SdsaForm::kv_first);
}

TEST_CASE("BSA hand-made ternary pattern: scores, Shiftmax exponents, outputs and counts") {
    const std::int64_t N = 4, D = 4;
    BsaNode node("bsa", identity(D), identity(D), identity(D), 1, Tsn{0.5f, 1.0f}, Tsn{0.5f, 0.5f});
    node.bind({N, D});
    Stepper s(node);
    std::vector<float> x{1, 1, 1, 1, -1, -1, -1, -1, 1, -1, 0, 0, 0, 0, 0, 0};
    const auto& out = s.run(act(x), Engine::event);
    // Q = K = x; rows of S: [4,-4,0,0] -> n = [1,9,5,5]; [-4,4,0,0] -> [9,1,5,5];
    // [0,0,2,0] -> [3,3,1,3]; [0,0,0,0] -> [2,2,2,2].
    // y0 = [0.5-2^-9+2^-5, 0.5-2^-9-2^-5, 0.5-2^-9, 0.5-2^-9] -> [1,0,0,0]; y1 = -y0 mirrored
    // -> [0,-1,0,0]; y2 = [0.5,-0.5,0,0] -> [1,-1,0,0]; y3 = [0.25,-0.25,0,0] -> none.
    CHECK(out.values == std::vector<float>{1, 0, 0, 0, 0, -1, 0, 0, 1, -1, 0, 0, 0, 0, 0, 0});
    CHECK(out.active == ternion::IndexList{0, 5, 8, 9});
    CHECK(out.ternary);
    std::vector<float> mem;
    CHECK(node.membrane(s.st.get(), mem));
    CHECK(mem[1] == 0.5f * (0.5f - 1.0f / 512 - 1.0f / 32));
    CHECK(mem[12] == 0.5f * 0.25f);
    CHECK(s.att.score_ac == 26);  // TMP pairs: 3*3 + 3*3 + 2*2 + 2*2
    CHECK(s.att.q_spikes == 10);
    CHECK(s.att.q_neg_spikes == 5);    // negative query spikes
    CHECK(s.att.out_neg_spikes == 2);  // negative output spikes
    const std::uint64_t n = N, d = D;
    CHECK(s.ops.ac == 30 + 26 + (2 * n * n + n * n * d));  // proj + TMP + Shiftmax + |>V
    // The same accumulates by stage: 30 projection ACs are the 10 non-zero inputs reaching one
    // weight in each of Q, K and V.
    CHECK(s.att.proj_ac == 30);
    CHECK(s.att.proj_mac == 0);
    CHECK(s.att.norm_ac == 2 * n * n);
    CHECK(s.att.norm_shift == n * n);
    CHECK(s.att.norm_cmp == n * n);
    CHECK(s.att.mix_ac == n * n * d);
    CHECK(s.att.mix_shift == n * n * d);
    CHECK(s.ops.shift == n * n + n * n * d);
    CHECK(s.ops.cmp == 3 * n * d + n * n);
    CHECK(s.ops.neuron_update == 3 * n * d);
    CHECK(s.ops.spikes_out == 4);
}

// BSA recomputed from its equations, independently of the node's kernels: projections (bias,
// then the inputs in ascending order), TSN Q/K, integer scores by a plain triple loop, Shiftmax
// exponents from an exact integer sum, the product with V over keys in ascending order (each
// 2^-n V product rounded, then added), the output TSN. The node must match it bit for bit: the
// order of the additions is part of BSA's definition (the exporters' PyTorch reference sums the
// same way), so a kernel that reorders them fails here.
void check_bsa(std::int64_t N, std::int64_t D, std::int64_t H, std::int64_t T, std::uint32_t seed) {
    std::mt19937 rng(seed);
    const std::int64_t dh = D / H;
    auto q = rand_w(rng, D, D, 0.6f, 0.0f), k = rand_w(rng, D, D, 0.6f, 0.0f),
         v = rand_w(rng, D, D, 0.9f, 0.1f);
    const Tsn qk{0.5f, 1.0f}, outp{0.5f, 0.25f};
    BsaNode node("bsa", Projection(q.w, q.b, D, D), Projection(k.w, k.b, D, D),
                 Projection(v.w, v.b, D, D), H, qk, outp);
    node.bind({N, D});
    Stepper st(node);
    std::vector<float> hq(N * D, 0.0f), hk(N * D, 0.0f), ho(N * D, 0.0f);
    auto tsn = [](float& h, float x, const Tsn& p) {
        const float u = h + x;
        const float s = u >= p.v_threshold ? 1.0f : (-u >= p.v_threshold ? -1.0f : 0.0f);
        h = s != 0.0f ? 0.0f : p.decay * u;
        return s;
    };
    auto project = [&](const RandW& r, const std::vector<float>& x) {
        std::vector<float> y(N * D);
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t o = 0; o < D; ++o) {
                float a = r.b[o];
                for (std::int64_t c = 0; c < D; ++c)
                    if (x[n * D + c] != 0.0f) a += x[n * D + c] * r.w[o * D + c];
                y[n * D + o] = a;
            }
        return y;
    };
    std::bernoulli_distribution fire(0.4);
    std::uniform_int_distribution<int> sign(0, 1);
    std::uint64_t spikes = 0;
    for (std::int64_t t = 0; t < T; ++t) {
        std::vector<float> x(N * D);
        for (auto& e : x) e = fire(rng) ? (sign(rng) ? 1.0f : -1.0f) : 0.0f;
        auto pq = project(q, x), pk = project(k, x), pv = project(v, x);
        std::vector<float> Q(N * D), K(N * D), y(N * D);
        for (std::int64_t i = 0; i < N * D; ++i) {
            Q[i] = tsn(hq[i], pq[i], qk);
            K[i] = tsn(hk[i], pk[i], qk);
        }
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t i = 0; i < N; ++i) {
                std::vector<long long> s(N);
                for (std::int64_t j = 0; j < N; ++j) {
                    long long a = 0;
                    for (std::int64_t c = h * dh; c < (h + 1) * dh; ++c)
                        a += static_cast<long long>(Q[i * D + c]) *
                             static_cast<long long>(K[j * D + c]);
                    s[j] = a;
                }
                // gamma = ceil(log2 sum_j 2^s_j): the sum of 2^(s_j - max) is exact in a double
                // while the scores span fewer than 48 values
                long long lo = s[0], hi = s[0];
                for (auto e : s) lo = std::min(lo, e), hi = std::max(hi, e);
                REQUIRE(hi - lo < 48);
                double sum = 0.0;
                for (auto e : s) sum += std::ldexp(1.0, static_cast<int>(e - hi));
                long long g = 0;  // smallest g with 2^g >= sum
                while (std::ldexp(1.0, static_cast<int>(g)) < sum) ++g;
                g += hi;
                for (std::int64_t c = h * dh; c < (h + 1) * dh; ++c) {
                    float a = 0.0f;
                    for (std::int64_t j = 0; j < N; ++j) {
                        const float w = std::ldexp(1.0f, static_cast<int>(s[j] - g));
                        a += w * pv[j * D + c];
                    }
                    y[i * D + c] = a;
                }
            }
        std::vector<float> want(N * D);
        for (std::int64_t i = 0; i < N * D; ++i) want[i] = tsn(ho[i], y[i], outp);
        const auto& out = st.run(act(x), Engine::event, t);
        CHECK(out.values == want);
        std::vector<float> mem;
        REQUIRE(node.membrane(st.st.get(), mem));
        CHECK(mem == ho);
        for (float e : want) spikes += e != 0.0f;
    }
    CHECK(spikes > 0);
}

TEST_CASE("V13 BSA with no input spikes: no TMP work, Shiftmax.V still costs") {
    std::mt19937 rng(12);
    const std::int64_t N = 8, D = 16, H = 2;
    auto q = rand_w(rng, D, D, 1, 0), k = rand_w(rng, D, D, 1, 0), v = rand_w(rng, D, D, 1, 0.5f);
    BsaNode node("bsa", Projection(q.w, q.b, D, D), Projection(k.w, k.b, D, D),
                 Projection(v.w, v.b, D, D), H, Tsn{}, Tsn{0.5f, 0.5f});
    node.bind({N, D});
    Stepper s(node);
    s.run(act(std::vector<float>(N * D, 0.0f)), Engine::event);
    CHECK(s.att.score_ac == 0);
    const std::uint64_t n = N, dh = D / H;
    CHECK(s.ops.ac == H * (2 * n * n + n * n * dh));
    CHECK(s.ops.shift == H * (n * n + n * n * dh));
}

TEST_CASE("BSA equals its equations recomputed, bit for bit: head widths 32, 20 and 16") {
    check_bsa(9, 64, 2, 3, 21);   // two 16-channel blocks a head, 9 rows (not a multiple of 4)
    check_bsa(13, 40, 2, 3, 22);  // 20 channels: one block and a 4-channel tail
    check_bsa(16, 64, 4, 4, 23);  // the digits model's heads
}

TEST_CASE("event and dense engines: identical spikes, membranes and counts for every node") {
    std::mt19937 rng(13);
    const std::int64_t N = 12, Din = 24, D = 16, H = 4, T = 6;
    auto q = rand_w(rng, D, Din, 0.7f, 0.4f), k = rand_w(rng, D, Din, 0.7f, 0.4f),
         v = rand_w(rng, D, Din, 0.7f, 0.4f);
    auto P = [&](const RandW& r) { return Projection(r.w, r.b, D, Din); };
    std::vector<std::unique_ptr<Node>> nodes;
    nodes.push_back(std::make_unique<SsaNode>("s", P(q), P(k), P(v), H, make_lif(),
                                              make_lif(2.0f, true, 0.5f, 0.0f), 0.125f,
                                              SsaAssociation::automatic));
    nodes.push_back(std::make_unique<SdsaNode>("d", P(q), P(k), P(v), H, make_lif(),
                                               make_lif(2.0f, true, 0.5f, 0.0f)));
    nodes.push_back(std::make_unique<SdsaNode>("d", P(q), P(k), P(v), H, make_lif(),
                                               make_lif(2.0f, true, 0.5f, 0.0f),
                                               SdsaForm::kv_first));
    nodes.push_back(std::make_unique<BsaNode>("b", P(q), P(k), P(v), H, Tsn{}, Tsn{0.5f, 0.5f}));
    // BatchNorm kept unfolded (bias after the sum, then the epilogue), both forms.
    auto bn = [&](BatchNorm::Form f) {
        auto g = rand_w(rng, 4, D, 0.5f, 0.0f);  // rows: gamma, beta, mean, var
        std::vector<float> gam(g.w.begin(), g.w.begin() + D),
            bet(g.w.begin() + D, g.w.begin() + 2 * D),
            mean(g.w.begin() + 2 * D, g.w.begin() + 3 * D), var(D);
        for (std::int64_t c = 0; c < D; ++c) var[c] = 0.1f + std::fabs(g.w[3 * D + c]);
        for (auto& x : gam) x += 1.0f;
        return BatchNorm(gam, bet, mean, var, 1e-5, f);
    };
    auto PB = [&](const RandW& r, BatchNorm::Form f) {
        return Projection(r.w, r.b, D, Din, bn(f));
    };
    nodes.push_back(std::make_unique<SsaNode>(
        "sb", PB(q, BatchNorm::Form::normalize), PB(k, BatchNorm::Form::fma),
        PB(v, BatchNorm::Form::normalize), H, make_lif(), make_lif(2.0f, true, 0.5f, 0.0f), 0.125f,
        SsaAssociation::automatic));
    for (auto& node : nodes) {
        node->bind({N, Din});
        Stepper ev(*node), de(*node);
        std::uint64_t spikes = 0;
        for (std::int64_t t = 0; t < T; ++t) {
            std::vector<float> x(N * Din);
            for (auto& e : x) {  // binary, ternary and {0,1,2} (residual sums) inputs
                const int r = static_cast<int>(rng() % 8);
                e = r < 2 ? 1.0f
                          : (r == 2 && t % 3 == 1 ? -1.0f : (r == 3 && t % 3 == 2 ? 2.0f : 0.0f));
            }
            const auto in = act(x);
            ev.run(in, Engine::event, t);
            de.run(in, Engine::dense, t);
            CHECK(ev.out.values == de.out.values);
            CHECK(ev.out.active == de.out.active);
            CHECK(ev.ops == de.ops);
            CHECK(ev.att == de.att);
            std::vector<float> m1, m2;
            node->membrane(ev.st.get(), m1);
            node->membrane(de.st.get(), m2);
            CHECK(m1 == m2);
            spikes += ev.out.active.size();
            if (t % 3 == 2) CHECK(ev.ops.mac == 0);  // {0,1,2}: coincident spikes, still ACs
        }
        CHECK(spikes > 0);
        CHECK(node->dense_macs_per_step() == std::uint64_t(3 * N * Din * D + 2 * N * N * D));
        CHECK(node->param_count() == std::uint64_t(3 * (Din * D + D)));
    }
}

TEST_CASE("SSA without projections: the input is Q | K | V's neuron input, nothing projected") {
    // The same analog [N, 3D] input through SSA with block-identity projections (Q reads columns
    // [0, D), K [D, 2D), V [2D, 3D)) and through SSA without projections: identical spikes,
    // membranes and attention counts; the second books no projection work at all.
    const std::int64_t N = 7, D = 8, H = 2, T = 5;
    std::vector<float> wq(D * 3 * D, 0.0f), wk = wq, wv = wq;
    for (std::int64_t i = 0; i < D; ++i) {
        wq[i * 3 * D + i] = 1.0f;
        wk[i * 3 * D + D + i] = 1.0f;
        wv[i * 3 * D + 2 * D + i] = 1.0f;
    }
    const auto attn = make_lif(2.0f, true, 0.5f, 0.0f);
    SsaNode proj("ssa", Projection(wq, {}, D, 3 * D), Projection(wk, {}, D, 3 * D),
                 Projection(wv, {}, D, 3 * D), H, make_lif(), attn, 0.125f,
                 SsaAssociation::kv_first);
    SsaNode bare("ssa", D, H, make_lif(), attn, 0.125f, SsaAssociation::kv_first);
    proj.bind({N, 3 * D});
    bare.bind({N, 3 * D});
    CHECK(bare.identity());
    CHECK(bare.out_shape() == Shape{N, D});
    Stepper a(proj), b(bare), bd(bare);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-0.5f, 4.0f);
    std::uint64_t spikes = 0;
    for (std::int64_t t = 0; t < T; ++t) {
        std::vector<float> x(N * 3 * D);
        for (auto& e : x) e = rng() % 4 ? u(rng) : 0.0f;
        const auto in = act(x);
        a.run(in, Engine::event, t);
        b.run(in, Engine::event, t);
        bd.run(in, Engine::dense, t);
        CHECK(a.out.values == b.out.values);
        CHECK(bd.out.values == b.out.values);
        CHECK(a.att.q_spikes == b.att.q_spikes);
        CHECK(a.att.v_spikes == b.att.v_spikes);
        CHECK(a.att.score_ac == b.att.score_ac);
        CHECK(a.att.mix_ac == b.att.mix_ac);
        CHECK(a.att.proj_mac > 0);
        CHECK(b.att.proj_mac == 0);
        CHECK(b.att.proj_ac == 0);
        CHECK(b.ops.mac == 0);
        CHECK(a.ops.ac == b.ops.ac);  // the projection's analog inputs cost MACs, not ACs
        CHECK(a.ops.neuron_update == b.ops.neuron_update);
        std::vector<float> m1, m2;
        proj.membrane(a.st.get(), m1);
        bare.membrane(b.st.get(), m2);
        CHECK(m1 == m2);
        spikes += b.out.active.size();
    }
    CHECK(spikes > 0);
    CHECK(bare.dense_macs_per_step() == std::uint64_t(2 * N * N * D));
    CHECK(bare.param_count() == 0);
    CHECK(bare.attention_shape()->proj_dense_macs_per_step == 0);
    CHECK(bare.float_groups().empty());  // no integer form without projections
}
