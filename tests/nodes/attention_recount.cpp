#include "tests/nodes/attention_recount.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace ternion::test {

namespace {

using Vec = std::vector<double>;

std::size_t at(std::int64_t i) {
    return static_cast<std::size_t>(i);
}

double scalar_or(const MapParams& p, const std::string& name, double dflt) {
    return p.has(name) ? p.doubles(name, nullptr)[0] : dflt;
}
// A per-output parameter given as one value per output or as one scalar.
Vec per_output_or(const MapParams& p, const std::string& name, std::int64_t n, double dflt) {
    if (!p.has(name)) return Vec(at(n), dflt);
    Vec v = p.doubles(name, nullptr);
    return v.size() == 1 ? Vec(at(n), v[0]) : v;
}

// y = BN(x W^T + b): PyTorch's Linear, then BatchNorm in eval mode when the file has one.
struct Linear {
    std::int64_t out = 0, in = 0;
    Vec w, b, g, beta, mean, var;  // w [out][in]
    double eps = 1e-5;
    bool bn = false;

    Linear(const MapParams& p, const std::string& pre) {
        Shape d;
        w = p.doubles(pre + "_weight", &d);
        out = d[0];
        in = d[1];
        b = per_output_or(p, pre + "_bias", out, 0.0);
        bn = p.has(pre + "_bn_weight") || p.has(pre + "_bn_bias") ||
             p.has(pre + "_bn_running_mean") || p.has(pre + "_bn_running_var");
        g = per_output_or(p, pre + "_bn_weight", out, 1.0);
        beta = per_output_or(p, pre + "_bn_bias", out, 0.0);
        mean = per_output_or(p, pre + "_bn_running_mean", out, 0.0);
        var = per_output_or(p, pre + "_bn_running_var", out, 1.0);
        eps = scalar_or(p, pre + "_bn_eps", 1e-5);
    }
    // Outputs an input event at channel i reaches: its non-zero weights (after the BN scale).
    std::uint64_t fan(std::int64_t i) const {
        std::uint64_t f = 0;
        for (std::int64_t o = 0; o < out; ++o)
            f += w[at(o * in + i)] != 0.0 && (!bn || g[at(o)] != 0.0);
        return f;
    }
    Vec apply(const std::vector<float>& x, std::int64_t tokens) const {
        Vec y(at(tokens * out));
        for (std::int64_t n = 0; n < tokens; ++n)
            for (std::int64_t o = 0; o < out; ++o) {
                double a = b[at(o)];
                for (std::int64_t i = 0; i < in; ++i) a += x[at(n * in + i)] * w[at(o * in + i)];
                if (bn)
                    a = g[at(o)] * (a - mean[at(o)]) / std::sqrt(var[at(o)] + eps) + beta[at(o)];
                y[at(n * out + o)] = a;
            }
        return y;
    }
};

// SpikingJelly's LIF (hard reset, fires on v >= v_th) and BSA's TSN, as documented.
struct Lif {
    double tau, vth, vreset;
    bool decay_input;
    Lif(const MapParams& p, const std::string& pre, double vth_default)
        : tau(scalar_or(p, pre + "tau", 2.0)),
          vth(scalar_or(p, pre + "v_threshold", vth_default)),
          vreset(scalar_or(p, pre + "v_reset", 0.0)),
          decay_input(scalar_or(p, pre + "decay_input", 1.0) != 0.0) {}
    double fire(double& v, double x, double& margin) const {
        v = decay_input ? v + (x - (v - vreset)) / tau : v - (v - vreset) / tau + x;
        margin = std::min(margin, std::fabs(v - vth));
        if (v < vth) return 0.0;
        v = vreset;
        return 1.0;
    }
};
struct Tsn {
    double decay, vth;
    Tsn(const MapParams& p, const std::string& pre, double vth_default)
        : decay(scalar_or(p, pre + "decay", 0.5)),
          vth(scalar_or(p, pre + "v_threshold", vth_default)) {}
    double fire(double& h, double x, double& margin) const {
        const double u = h + x;
        margin = std::min(margin, std::fabs(std::fabs(u) - vth));
        const double s = u >= vth ? 1.0 : (-u >= vth ? -1.0 : 0.0);
        h = s != 0.0 ? 0.0 : decay * u;
        return s;
    }
};

std::uint64_t nz(double x) {
    return x != 0.0 ? 1 : 0;
}

// What the variants share: shapes and the projections (V absent in Q-K attention).
struct Model {
    std::int64_t N, Din, D, H, dh;
    Linear q, k;
    std::optional<Linear> v;
    Model(const MapParams& p, std::int64_t tokens) : N(tokens), q(p, "q"), k(p, "k") {
        if (p.has("v_weight")) v.emplace(p, "v");
        Din = q.in;
        D = q.out;
        H = static_cast<std::int64_t>(scalar_or(p, "heads", 1.0));
        dh = D / H;
    }
};

// The projections' event cost (sim/kernels/event_cost.hpp's rule as docs/bsa.md states it): per
// non-zero input its fan over Q, K and V; spikes cost fan ACs, small integers |x| fan ACs,
// anything else fan MACs; 4 weight bytes per pair.
void book_projection(const Model& m, const std::vector<float>& x, AttentionRecount& r) {
    std::uint64_t pairs = 0, weighted = 0;
    bool ternary = true, integral = true;
    for (std::size_t e = 0; e < x.size(); ++e) {
        if (x[e] == 0.0f) continue;
        const auto i = static_cast<std::int64_t>(e) % m.Din;
        const std::uint64_t f = m.q.fan(i) + m.k.fan(i) + (m.v ? m.v->fan(i) : 0);
        const double a = std::fabs(double(x[e]));
        pairs += f;
        ternary = ternary && a == 1.0;
        integral = integral && a == std::floor(a) && a <= 16.0;
        weighted += static_cast<std::uint64_t>(a) * f;
    }
    r.pairs += pairs;
    r.ops.weight_read_bytes += 4 * pairs;
    const std::uint64_t ac = ternary ? pairs : (integral ? weighted : 0);
    const std::uint64_t mac = ternary || integral ? 0 : pairs;
    r.att.proj_ac += ac;
    r.att.proj_mac += mac;
    r.ops.ac += ac;
    r.ops.mac += mac;
}

void book_neurons(std::uint64_t n, AttentionRecount& r) {
    r.ops.neuron_update += n;
    r.ops.cmp += n;
    r.ops.state_read_bytes += 4 * n;
    r.ops.state_write_bytes += 4 * n;
}

void book_output(std::int64_t s, std::int64_t t, const Vec& y, AttentionRecount& r) {
    std::vector<float> o(y.size());
    for (std::size_t i = 0; i < y.size(); ++i) {
        o[i] = static_cast<float>(y[i]);
        r.ops.spikes_out += nz(y[i]);
    }
    r.out[{s, t}] = std::move(o);
}

// SSA's per-head cost of both associations (docs/bsa.md): (Q K^T) V = sum_c nq(c) nk(c) +
// sum over non-zero S_ij of |V_j|; Q (K^T V) = sum_j |K_j| |V_j| + sum_c nq(c) nnz(M_c), M =
// K^T V. Books the cheaper (on a tie: (Q K^T) V), or the one `assoc` forces, and writes the
// head's Q K^T V into y.
void ssa_head(const Model& m, std::int64_t h, const Vec& Q, const Vec& K, const Vec& V,
              const std::string& assoc, Vec& y, AttentionRecount& r) {
    const std::int64_t N = m.N, D = m.D, dh = m.dh, c0 = h * dh;
    auto el = [&](const Vec& X, std::int64_t n, std::int64_t c) { return X[at(n * D + c0 + c)]; };
    std::uint64_t qk_score = 0, qk_mix = 0, kv_score = 0, kv_mix = 0;
    Vec vrow(at(N), 0.0), krow(at(N), 0.0);
    for (std::int64_t j = 0; j < N; ++j)
        for (std::int64_t c = 0; c < dh; ++c) {
            vrow[at(j)] += el(V, j, c);
            krow[at(j)] += el(K, j, c);
        }
    for (std::int64_t c = 0; c < dh; ++c) {
        double nq = 0, nk = 0;
        for (std::int64_t n = 0; n < N; ++n) {
            nq += el(Q, n, c);
            nk += el(K, n, c);
        }
        qk_score += static_cast<std::uint64_t>(nq * nk);
        std::uint64_t row = 0;
        for (std::int64_t c2 = 0; c2 < dh; ++c2) {
            double mcc = 0;
            for (std::int64_t j = 0; j < N; ++j) mcc += el(K, j, c) * el(V, j, c2);
            row += nz(mcc);
        }
        kv_mix += static_cast<std::uint64_t>(nq) * row;
    }
    for (std::int64_t j = 0; j < N; ++j) kv_score += static_cast<std::uint64_t>(krow[j] * vrow[j]);
    for (std::int64_t i = 0; i < N; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            double sij = 0;
            for (std::int64_t c = 0; c < dh; ++c) sij += el(Q, i, c) * el(K, j, c);
            if (sij != 0.0) qk_mix += static_cast<std::uint64_t>(vrow[at(j)]);
            for (std::int64_t c = 0; c < dh; ++c) y[at(i * D + c0 + c)] += sij * el(V, j, c);
        }
    const bool qk = assoc == "qk" || (assoc != "kv" && qk_score + qk_mix <= kv_score + kv_mix);
    r.att.score_ac += qk ? qk_score : kv_score;
    r.att.mix_ac += qk ? qk_mix : kv_mix;
    r.ops.ac += qk ? qk_score + qk_mix : kv_score + kv_mix;
    (qk ? r.att.qk_first_heads : r.att.kv_first_heads) += 1;
}

void count_qkv_spikes(const Vec& Q, const Vec& K, const Vec& V, AttentionRecount& r) {
    for (std::size_t i = 0; i < Q.size(); ++i) {
        r.att.q_spikes += nz(Q[i]);
        r.att.k_spikes += nz(K[i]);
        r.att.v_spikes += nz(V[i]);
        r.att.q_neg_spikes += Q[i] < 0.0;
        r.att.k_neg_spikes += K[i] < 0.0;
    }
}

// Q, K, V spikes of one step from the projection outputs and the LIF membranes hq, hk, hv.
void fire_lif_qkv(const Model& m, const Lif& lif, const std::vector<float>& x, Vec* mem,
                  Vec* spikes, AttentionRecount& r) {
    const Linear* proj[3] = {&m.q, &m.k, &*m.v};
    for (int p = 0; p < 3; ++p) {
        const Vec z = proj[p]->apply(x, m.N);
        for (std::size_t i = 0; i < z.size(); ++i)
            spikes[p][i] = lif.fire(mem[p][i], z[i], r.margin);
    }
    book_neurons(3 * at(m.N * m.D), r);
    count_qkv_spikes(spikes[0], spikes[1], spikes[2], r);
}

void run_ssa(const Model& m, const MapParams& p, std::int64_t samples, std::int64_t steps,
             const InputOf& input, AttentionRecount& r) {
    const Lif lif(p, "lif_", 1.0), attn(p, "attn_", 0.5);
    const double scale = scalar_or(p, "scale", 0.125);
    const std::string assoc = p.has("association") ? p.string("association") : "auto";
    const std::size_t nd = at(m.N * m.D);
    for (std::int64_t s = 0; s < samples; ++s) {
        Vec mem[3] = {Vec(nd), Vec(nd), Vec(nd)}, spikes[3] = {Vec(nd), Vec(nd), Vec(nd)};
        Vec hout(nd, 0.0);
        for (std::int64_t t = 0; t < steps; ++t) {
            const auto& x = input(s, t);
            book_projection(m, x, r);
            fire_lif_qkv(m, lif, x, mem, spikes, r);
            Vec y(nd, 0.0);
            for (std::int64_t h = 0; h < m.H; ++h)
                ssa_head(m, h, spikes[0], spikes[1], spikes[2], assoc, y, r);
            for (std::size_t i = 0; i < nd; ++i) y[i] = attn.fire(hout[i], y[i] * scale, r.margin);
            book_neurons(nd, r);
            book_output(s, t, y, r);
        }
    }
}

// SDSA: column sums over tokens of a (.) b (one AC per coincident pair), one mask neuron per
// channel, the mask applied to `gated` (a selection, free).
void run_sdsa(const Model& m, const MapParams& p, std::int64_t samples, std::int64_t steps,
              const InputOf& input, AttentionRecount& r) {
    const Lif lif(p, "lif_", 1.0), attn(p, "attn_", 0.5);
    const bool kv = p.has("form") && p.string("form") == "kv";
    const std::size_t nd = at(m.N * m.D);
    for (std::int64_t s = 0; s < samples; ++s) {
        Vec mem[3] = {Vec(nd), Vec(nd), Vec(nd)}, spikes[3] = {Vec(nd), Vec(nd), Vec(nd)};
        Vec hmask(at(m.D), 0.0);
        for (std::int64_t t = 0; t < steps; ++t) {
            const auto& x = input(s, t);
            book_projection(m, x, r);
            fire_lif_qkv(m, lif, x, mem, spikes, r);
            const Vec &a = kv ? spikes[1] : spikes[0], &b = kv ? spikes[2] : spikes[1];
            const Vec& gated = kv ? spikes[0] : spikes[2];
            Vec y(nd, 0.0);
            for (std::int64_t c = 0; c < m.D; ++c) {
                double sum = 0;
                for (std::int64_t n = 0; n < m.N; ++n)
                    sum += a[at(n * m.D + c)] * b[at(n * m.D + c)];
                r.att.score_ac += static_cast<std::uint64_t>(sum);
                r.ops.ac += static_cast<std::uint64_t>(sum);
                const double open = attn.fire(hmask[at(c)], sum, r.margin);
                r.att.mask_channels += nz(open);
                for (std::int64_t n = 0; n < m.N; ++n)
                    y[at(n * m.D + c)] = open * gated[at(n * m.D + c)];
            }
            book_neurons(at(m.D), r);
            book_output(s, t, y, r);
        }
    }
}

// QKFormer's Q-K attention (its official Token_QK_Attention): Q, K = LIF(proj); per head and
// token (form "token") or per channel ("channel"), a LIF over the sum of binary Q (one AC per
// query spike) gives a mask; out = mask (.) K.
void run_qk(const Model& m, const MapParams& p, std::int64_t samples, std::int64_t steps,
            const InputOf& input, AttentionRecount& r) {
    const Lif lif(p, "lif_", 1.0), attn(p, "attn_", 0.5);
    const bool token = !p.has("form") || p.string("form") == "token";
    const std::size_t nd = at(m.N * m.D), masks = at(token ? m.H * m.N : m.D);
    for (std::int64_t s = 0; s < samples; ++s) {
        Vec hq(nd, 0.0), hk(nd, 0.0), hmask(masks, 0.0), Q(nd), K(nd);
        for (std::int64_t t = 0; t < steps; ++t) {
            const auto& x = input(s, t);
            book_projection(m, x, r);
            const Vec zq = m.q.apply(x, m.N), zk = m.k.apply(x, m.N);
            for (std::size_t i = 0; i < nd; ++i) {
                Q[i] = lif.fire(hq[i], zq[i], r.margin);
                K[i] = lif.fire(hk[i], zk[i], r.margin);
            }
            book_neurons(2 * nd, r);
            count_qkv_spikes(Q, K, Vec(nd, 0.0), r);
            Vec sum(masks, 0.0);
            auto mask = [&](std::int64_t n, std::int64_t c) {
                return at(token ? (c / m.dh) * m.N + n : c);
            };
            for (std::int64_t n = 0; n < m.N; ++n)
                for (std::int64_t c = 0; c < m.D; ++c) sum[mask(n, c)] += Q[at(n * m.D + c)];
            for (double q : Q) r.att.score_ac += nz(q), r.ops.ac += nz(q);
            Vec open(masks);
            for (std::size_t j = 0; j < masks; ++j) {
                open[j] = attn.fire(hmask[j], sum[j], r.margin);
                r.att.mask_channels += nz(open[j]);
            }
            book_neurons(masks, r);
            Vec y(nd, 0.0);
            for (std::int64_t n = 0; n < m.N; ++n)
                for (std::int64_t c = 0; c < m.D; ++c)
                    y[at(n * m.D + c)] = open[mask(n, c)] * K[at(n * m.D + c)];
            book_output(s, t, y, r);
        }
    }
}

// BSA's Shiftmax of one score row (spec 1.4): weights 2^(x_j - gamma), gamma = m + the least
// k with 2^k >= sum_j 2^(x_j - m), m = max_j x_j.
Vec shiftmax(const Vec& x) {
    const double mx = *std::max_element(x.begin(), x.end());
    double sum = 0;
    for (double v : x) sum += std::ldexp(1.0, static_cast<int>(v - mx));
    int k = 0;
    while (std::ldexp(1.0, k) < sum) ++k;
    Vec w(x.size());
    for (std::size_t j = 0; j < x.size(); ++j)
        w[j] = std::ldexp(1.0, static_cast<int>(x[j] - mx) - k);
    return w;
}

// One BSA head: ternary Q K^T (one AC per non-zero pair), Shiftmax per row (2n adds, n shifts,
// n comparisons), shift-and-add with analog V (one shift and one add per query, key, channel).
void bsa_head(const Model& m, std::int64_t h, const Vec& Q, const Vec& K, const Vec& V, Vec& y,
              AttentionRecount& r) {
    const std::int64_t N = m.N, D = m.D, dh = m.dh, c0 = h * dh;
    auto el = [&](const Vec& X, std::int64_t n, std::int64_t c) { return X[at(n * D + c0 + c)]; };
    std::uint64_t pairs = 0;
    for (std::int64_t c = 0; c < dh; ++c) {
        std::uint64_t nq = 0, nk = 0;
        for (std::int64_t n = 0; n < N; ++n) {
            nq += nz(el(Q, n, c));
            nk += nz(el(K, n, c));
        }
        pairs += nq * nk;
    }
    for (std::int64_t i = 0; i < N; ++i) {
        Vec srow(at(N), 0.0);
        for (std::int64_t j = 0; j < N; ++j)
            for (std::int64_t c = 0; c < dh; ++c) srow[at(j)] += el(Q, i, c) * el(K, j, c);
        const Vec w = shiftmax(srow);
        for (std::int64_t j = 0; j < N; ++j)
            for (std::int64_t c = 0; c < dh; ++c) y[at(i * D + c0 + c)] += w[at(j)] * el(V, j, c);
    }
    const auto n = static_cast<std::uint64_t>(N), d = static_cast<std::uint64_t>(dh);
    r.att.score_ac += pairs;
    r.att.norm_ac += 2 * n * n;
    r.att.norm_shift += n * n;
    r.att.norm_cmp += n * n;
    r.att.mix_ac += n * n * d;
    r.att.mix_shift += n * n * d;
    r.ops.ac += pairs + 2 * n * n + n * n * d;
    r.ops.shift += n * n + n * n * d;
    r.ops.cmp += n * n;
}

void run_bsa(const Model& m, const MapParams& p, std::int64_t samples, std::int64_t steps,
             const InputOf& input, AttentionRecount& r) {
    const Tsn qk(p, "qk_", 1.0), outn(p, "out_", 0.5);
    const std::size_t nd = at(m.N * m.D);
    for (std::int64_t s = 0; s < samples; ++s) {
        Vec hq(nd, 0.0), hk(nd, 0.0), hout(nd, 0.0), Q(nd), K(nd);
        for (std::int64_t t = 0; t < steps; ++t) {
            const auto& x = input(s, t);
            book_projection(m, x, r);
            const Vec zq = m.q.apply(x, m.N), zk = m.k.apply(x, m.N), V = m.v->apply(x, m.N);
            for (std::size_t i = 0; i < nd; ++i) {
                Q[i] = qk.fire(hq[i], zq[i], r.margin);
                K[i] = qk.fire(hk[i], zk[i], r.margin);
            }
            book_neurons(2 * nd, r);
            count_qkv_spikes(Q, K, Vec(nd, 0.0), r);  // V is analog: no V spikes
            Vec y(nd, 0.0);
            for (std::int64_t h = 0; h < m.H; ++h) bsa_head(m, h, Q, K, V, y, r);
            for (std::size_t i = 0; i < nd; ++i) {
                y[i] = outn.fire(hout[i], y[i], r.margin);
                r.att.out_neg_spikes += y[i] < 0.0;
            }
            book_neurons(nd, r);
            book_output(s, t, y, r);
        }
    }
}

// SDT V3's MultiSpike quantiser: round(clamp(x, lo, hi)), half to even; margin: how close the
// clamped value came to a rounding boundary k + 1/2.
struct MultiSpikeQ {
    double lo, hi;
    MultiSpikeQ(const MapParams& p)
        : lo(scalar_or(p, "min_value", 0.0)), hi(scalar_or(p, "max_value", 4.0)) {}
    double fire(double x, double& margin) const {
        const double c = std::min(std::max(x, lo), hi);
        if (c > lo && c < hi) margin = std::min(margin, std::fabs(c - std::floor(c) - 0.5));
        return std::nearbyint(c);
    }
};

// ternion.MultiSpikeAttention in the D-virtual-step expansion: every unit of an integer count is
// one binary spike, so SSA's rules apply with counts for spikes. Per head: (Q K^T) V costs
// sum_c nq(c) nk(c) + sum over non-zero S_ij of sum_d |V_jd|; Q (K^T V) costs
// sum_j |K_j| |V_j| + sum_c nq(c) nnz(M_c); the cheaper (ties: (Q K^T) V) or the forced one.
// out = round(clamp(scale * Q K^T V)); V (and the output) may be wider than Q and K.
void run_multispike(const Model& m, const MapParams& p, std::int64_t samples, std::int64_t steps,
                    const InputOf& input, AttentionRecount& r) {
    const MultiSpikeQ qz(p);
    const double scale = static_cast<float>(scalar_or(p, "scale", 1.0));
    const std::string assoc = p.has("association") ? p.string("association") : "auto";
    const std::int64_t N = m.N, D = m.D, Dv = m.v->out, H = m.H, dh = m.dh, dvh = Dv / H;
    for (std::int64_t s = 0; s < samples; ++s)
        for (std::int64_t t = 0; t < steps; ++t) {
            const auto& x = input(s, t);
            book_projection(m, x, r);
            const Vec zq = m.q.apply(x, N), zk = m.k.apply(x, N), zv = m.v->apply(x, N);
            Vec Q(zq.size()), K(zk.size()), V(zv.size());
            for (std::size_t i = 0; i < zq.size(); ++i) {
                Q[i] = qz.fire(zq[i], r.margin);
                K[i] = qz.fire(zk[i], r.margin);
                r.att.q_spikes += static_cast<std::uint64_t>(std::fabs(Q[i]));
                r.att.k_spikes += static_cast<std::uint64_t>(std::fabs(K[i]));
            }
            for (std::size_t i = 0; i < zv.size(); ++i) {
                V[i] = qz.fire(zv[i], r.margin);
                r.att.v_spikes += static_cast<std::uint64_t>(std::fabs(V[i]));
            }
            book_neurons(at(N * (2 * D + Dv)), r);
            Vec y(at(N * Dv), 0.0);
            for (std::int64_t h = 0; h < H; ++h) {
                auto q = [&](std::int64_t n, std::int64_t c) { return Q[at(n * D + h * dh + c)]; };
                auto k = [&](std::int64_t n, std::int64_t c) { return K[at(n * D + h * dh + c)]; };
                auto v = [&](std::int64_t n, std::int64_t d) {
                    return V[at(n * Dv + h * dvh + d)];
                };
                std::uint64_t qk_score = 0, qk_mix = 0, kv_score = 0, kv_mix = 0;
                for (std::int64_t c = 0; c < dh; ++c) {
                    double nq = 0, nk = 0;
                    for (std::int64_t n = 0; n < N; ++n) {
                        nq += std::fabs(q(n, c));
                        nk += std::fabs(k(n, c));
                    }
                    qk_score += static_cast<std::uint64_t>(nq * nk);
                    std::uint64_t row = 0;
                    for (std::int64_t d = 0; d < dvh; ++d) {
                        double mcd = 0;
                        for (std::int64_t j = 0; j < N; ++j) mcd += k(j, c) * v(j, d);
                        row += nz(mcd);
                    }
                    kv_mix += static_cast<std::uint64_t>(nq) * row;
                }
                for (std::int64_t j = 0; j < N; ++j) {
                    double kj = 0, vj = 0;
                    for (std::int64_t c = 0; c < dh; ++c) kj += std::fabs(k(j, c));
                    for (std::int64_t d = 0; d < dvh; ++d) vj += std::fabs(v(j, d));
                    kv_score += static_cast<std::uint64_t>(kj * vj);
                }
                for (std::int64_t i = 0; i < N; ++i)
                    for (std::int64_t j = 0; j < N; ++j) {
                        double sij = 0, vj = 0;
                        for (std::int64_t c = 0; c < dh; ++c) sij += q(i, c) * k(j, c);
                        for (std::int64_t d = 0; d < dvh; ++d) {
                            vj += std::fabs(v(j, d));
                            y[at(i * Dv + h * dvh + d)] += sij * v(j, d);
                        }
                        if (sij != 0.0) qk_mix += static_cast<std::uint64_t>(vj);
                    }
                const bool qk =
                    assoc == "qk" || (assoc != "kv" && qk_score + qk_mix <= kv_score + kv_mix);
                r.att.score_ac += qk ? qk_score : kv_score;
                r.att.mix_ac += qk ? qk_mix : kv_mix;
                (qk ? r.att.qk_first_heads : r.att.kv_first_heads) += 1;
                r.ops.ac += qk ? qk_score + qk_mix : kv_score + kv_mix;
            }
            // The node rounds float32(Y) * scale once in float32; Y is exact here.
            for (auto& e : y) {
                e = qz.fire(static_cast<double>(static_cast<float>(e) * static_cast<float>(scale)),
                            r.margin);
                r.ops.spikes_out += static_cast<std::uint64_t>(std::fabs(e));
            }
            book_neurons(at(N * Dv), r);
            std::vector<float> o(y.size());
            for (std::size_t i = 0; i < y.size(); ++i) o[i] = static_cast<float>(y[i]);
            r.out[{s, t}] = std::move(o);
        }
}

}  // namespace

AttentionRecount recount_spiking_attention(const std::string& type, const MapParams& p,
                                           std::int64_t tokens, std::int64_t samples,
                                           std::int64_t steps, const InputOf& input) {
    AttentionRecount r;
    const Model m(p, tokens);
    if (type == "ternion.SSA")
        run_ssa(m, p, samples, steps, input, r);
    else if (type == "ternion.SDSA")
        run_sdsa(m, p, samples, steps, input, r);
    else if (type == "ternion.BSA")
        run_bsa(m, p, samples, steps, input, r);
    else if (type == "ternion.QKAttention")
        run_qk(m, p, samples, steps, input, r);
    else if (type == "ternion.MultiSpikeAttention")
        run_multispike(m, p, samples, steps, input, r);
    else  // a new variant with a closed form needs its own independent recount here
        throw std::logic_error("no independent recount for attention type " + type);
    r.ops.spike_write_bytes = 4 * r.ops.spikes_out;
    return r;
}

}  // namespace ternion::test
