#include "sim/synaptic/projection.hpp"

#include <stdexcept>
#include <utility>

namespace ternion {

Projection::Projection(const std::vector<float>& weight, std::vector<float> bias, std::int64_t out,
                       std::int64_t in, BatchNorm bn)
    : bias_(std::move(bias)),
      order_(bn.empty() ? BiasOrder::first : BiasOrder::last),
      bn_(std::move(bn)) {
    if (static_cast<std::int64_t>(weight.size()) != in * out)
        throw std::invalid_argument("projection weight size");
    std::vector<float> wt(static_cast<std::size_t>(in * out));
    for (std::int64_t o = 0; o < out; ++o)
        for (std::int64_t i = 0; i < in; ++i)
            wt[static_cast<std::size_t>(i * out + o)] =
                weight[static_cast<std::size_t>(o * in + i)];
    panels_.build(wt.data(), in, out);
    count_nonzeros();
}

Projection Projection::from_columns(const float* w_in_out, std::int64_t in, std::int64_t out,
                                    std::vector<float> bias, BiasOrder order) {
    Projection p;
    p.bias_ = std::move(bias);
    p.order_ = order;
    p.panels_.build(w_in_out, in, out);
    p.count_nonzeros();
    return p;
}

void Projection::count_nonzeros() {
    row_nnz_.assign(static_cast<std::size_t>(in()), 0);
    nnz_total_ = 0;
    for (std::int64_t i = 0; i < in(); ++i) {
        for (std::int64_t o = 0; o < out(); ++o)
            if (at(i, o) != 0.0f) ++row_nnz_[static_cast<std::size_t>(i)];
        nnz_total_ += row_nnz_[static_cast<std::size_t>(i)];
    }
}

Projection Projection::concat(const std::vector<const Projection*>& parts) {
    const std::int64_t in = parts.at(0)->in();
    std::int64_t out = 0;
    for (auto* p : parts) out += p->out();
    // One bias order for the whole stack: every part's BatchNorm unfolded, or none.
    std::vector<const BatchNorm*> bns;
    for (auto* p : parts)
        if (!p->bn_.empty()) bns.push_back(&p->bn_);
    if (!bns.empty() && bns.size() != parts.size())
        throw std::invalid_argument("projections stacked with and without a BatchNorm epilogue");
    std::vector<float> wt(static_cast<std::size_t>(in * out)), bias;
    bool biased = false;
    for (auto* p : parts) biased = biased || !p->bias_.empty();
    std::int64_t off = 0;
    for (auto* p : parts) {
        if (p->in() != in || p->order_ != parts[0]->order_)
            throw std::invalid_argument("projections stacked with different inputs or bias order");
        for (std::int64_t i = 0; i < in; ++i)
            for (std::int64_t o = 0; o < p->out(); ++o)
                wt[static_cast<std::size_t>(i * out + off + o)] = p->at(i, o);
        // A part without a bias adds zero, as one with a zero bias would.
        if (biased) {
            if (p->bias_.empty())
                bias.insert(bias.end(), static_cast<std::size_t>(p->out()), 0.0f);
            else
                bias.insert(bias.end(), p->bias_.begin(), p->bias_.end());
        }
        off += p->out();
    }
    Projection r = from_columns(wt.data(), in, out, std::move(bias), parts[0]->order_);
    if (!bns.empty()) r.bn_ = BatchNorm::concat(bns);
    return r;
}

void Projection::rows(const TokenEvents& ev, bool unit, float* y, std::int64_t r0, std::int64_t r1,
                      std::uint64_t* nz, std::uint64_t* nt, TokenScratch& scratch) const {
    token_rows(panels_, ev, bias_.empty() ? nullptr : bias_.data(), order_, unit, y, r0, r1, nz, nt,
               scratch);
}

// Both forms: the kernel over every row, then the epilogue; the pairs from the events.
std::uint64_t Projection::whole(const TokenEvents& ev, bool unit, std::int64_t tokens,
                                float* acc) const {
    // Per-thread scratch: a Projection is shared by every sample running in parallel.
    thread_local TokenScratch scratch;
    rows(ev, unit, acc, 0, out(), nullptr, nullptr, scratch);
    if (!bn_.empty()) bn_.apply_rows(acc, tokens);
    std::uint64_t pairs = 0;
    for (std::size_t k = 0; k < ev.chan.size(); ++k)
        if (ev.x[k] != 0.0f) pairs += row_nnz_[ev.chan[k]];
    return pairs;
}

std::uint64_t Projection::apply_event(const float* x, const IndexList& active, std::int64_t tokens,
                                      float* acc, bool ternary) const {
    thread_local TokenEvents ev;
    ev.build(active, x, in(), tokens);
    return whole(ev, ternary, tokens, acc);
}

std::uint64_t Projection::apply_dense(const float* x, std::int64_t tokens, float* acc) const {
    // Every input is an event: the kernel takes its dense tile, the one the event form takes
    // for inputs at least half non-zero, so both forms add the same terms in the same order.
    thread_local TokenEvents ev;
    ev.build_every(x, in(), tokens);
    return whole(ev, false, tokens, acc);
}

bool Projection::matrix(std::int64_t o0, std::int64_t o1, std::vector<float>& w,
                        std::vector<float>& b) const {
    if (!bn_.empty()) return false;
    const std::int64_t n = in();
    w.assign(static_cast<std::size_t>((o1 - o0) * n), 0.0f);
    b.assign(static_cast<std::size_t>(o1 - o0), 0.0f);
    for (std::int64_t o = o0; o < o1; ++o) {
        for (std::int64_t i = 0; i < n; ++i)
            w[static_cast<std::size_t>((o - o0) * n + i)] = at(i, o);
        if (!bias_.empty())
            b[static_cast<std::size_t>(o - o0)] = bias_[static_cast<std::size_t>(o)];
    }
    return true;
}

}  // namespace ternion
