// ColumnWeights (sim/synaptic/synaptic.hpp): the column store of Linear layers, built from dense
// weights or compressed rows, and its column delivery.
#include <algorithm>
#include <cmath>

#include "sim/synaptic/synaptic.hpp"

namespace ternion {

void ColumnWeights::build(const std::vector<float>& w, std::int64_t out, std::int64_t in) {
    out_ = out;
    in_ = in;
    int_bytes_ = integer_weight_bytes(w.data(), w.size());
    col_nnz_.assign(static_cast<std::size_t>(in), 0);
    nnz_ = 0;
    for (std::int64_t r = 0; r < out; ++r)
        for (std::int64_t c = 0; c < in; ++c)
            if (w[static_cast<std::size_t>(r * in + c)] != 0.0f) {
                ++col_nnz_[static_cast<std::size_t>(c)];
                ++nnz_;
            }
    double density = out * in > 0 ? static_cast<double>(nnz_) / static_cast<double>(out * in) : 1;
    // Below a quarter non-zero, index+value (6 bytes) beats a dense column (4 bytes/row).
    sparse_ = density < 0.25;
    choose_block();
    dense_.clear();
    colptr_.clear();
    rows_.clear();
    vals_.clear();
    codes_.clear();
    codebook_.clear();
    if (!sparse_) {
        dense_.resize(static_cast<std::size_t>(in * out));
        for (std::int64_t r = 0; r < out; ++r)
            for (std::int64_t c = 0; c < in; ++c)
                dense_[static_cast<std::size_t>(c * out + r)] =
                    w[static_cast<std::size_t>(r * in + c)];
        return;
    }
    const std::int64_t nb = nblocks(), kBlock = block_;
    colptr_.assign(static_cast<std::size_t>(in * (nb + 1)), 0);
    std::vector<Syn> syn;
    syn.reserve(nnz_);
    for (std::int64_t c = 0; c < in; ++c) {
        for (std::int64_t b = 0; b < nb; ++b) {
            colptr_[run_at(c, b)] = static_cast<std::uint32_t>(syn.size());
            const std::int64_t r0 = b * kBlock, r1 = std::min(out, r0 + kBlock);
            for (std::int64_t r = r0; r < r1; ++r) {
                float v = w[static_cast<std::size_t>(r * in + c)];
                if (v != 0.0f) syn.push_back({static_cast<std::uint32_t>(r - row_base(b)), v});
            }
        }
        colptr_[run_at(c, nb)] = static_cast<std::uint32_t>(syn.size());
    }
    compact(syn);
}

void ColumnWeights::compact(std::vector<Syn>& syn) {
    rows_.resize(syn.size());
    for (std::size_t k = 0; k < syn.size(); ++k) rows_[k] = static_cast<std::uint16_t>(syn[k].row);
    vals_.clear();
    codes_.clear();
    codebook_.clear();
    if (use_codebook_) {
        std::vector<float> distinct;
        for (const auto& e : syn) {
            auto it = std::lower_bound(distinct.begin(), distinct.end(), e.w);
            if (it == distinct.end() || *it != e.w) {
                if (distinct.size() == 256) {
                    distinct.clear();
                    break;
                }
                distinct.insert(it, e.w);
            }
        }
        if (!distinct.empty()) {
            codebook_ = distinct;
            if (codebook_.size() > 1) {
                codes_.resize(syn.size());
                for (std::size_t k = 0; k < syn.size(); ++k)
                    codes_[k] = static_cast<std::uint8_t>(
                        std::lower_bound(codebook_.begin(), codebook_.end(), syn[k].w) -
                        codebook_.begin());
            }
            syn.clear();
            syn.shrink_to_fit();
            return;
        }
    }
    vals_.resize(syn.size());
    for (std::size_t k = 0; k < syn.size(); ++k) vals_[k] = syn[k].w;
    syn.clear();
    syn.shrink_to_fit();
}

void ColumnWeights::build_csr(const std::vector<std::int64_t>& indptr,
                              const std::vector<std::int64_t>& indices,
                              const std::vector<float>& values, std::int64_t out, std::int64_t in) {
    out_ = out;
    in_ = in;
    int_bytes_ = integer_weight_bytes(values.data(), values.size());
    col_nnz_.assign(static_cast<std::size_t>(in), 0);
    nnz_ = 0;
    for (std::size_t k = 0; k < values.size(); ++k)
        if (values[k] != 0.0f) {
            ++col_nnz_[static_cast<std::size_t>(indices[k])];
            ++nnz_;
        }
    const double density = static_cast<double>(nnz_) / static_cast<double>(out * in);
    if (density >= 0.25) {  // dense enough: a dense column layout is smaller and faster
        std::vector<float> w(static_cast<std::size_t>(out * in), 0.0f);
        for (std::int64_t r = 0; r < out; ++r)
            for (auto k = indptr[static_cast<std::size_t>(r)];
                 k < indptr[static_cast<std::size_t>(r) + 1]; ++k)
                w[static_cast<std::size_t>(r * in + indices[static_cast<std::size_t>(k)])] +=
                    values[static_cast<std::size_t>(k)];
        build(w, out, in);
        return;
    }
    sparse_ = true;
    dense_.clear();
    choose_block();
    const std::int64_t nb = nblocks(), kBlock = block_;
    colptr_.assign(static_cast<std::size_t>(in * (nb + 1)), 0);
    std::vector<Syn> syn(nnz_, Syn{0, 0.0f});
    // Counting sort by (column, block); rows stay ascending within each run.
    std::vector<std::uint64_t> fill(static_cast<std::size_t>(in * nb), 0);
    for (std::int64_t r = 0; r < out; ++r)
        for (auto k = indptr[static_cast<std::size_t>(r)];
             k < indptr[static_cast<std::size_t>(r) + 1]; ++k)
            if (values[static_cast<std::size_t>(k)] != 0.0f)
                ++fill[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)] * nb +
                                                r / kBlock)];
    std::uint64_t off = 0;
    for (std::int64_t c = 0; c < in; ++c) {
        for (std::int64_t b = 0; b < nb; ++b) {
            // fill: this run's count, then where its next synapse goes.
            auto& f = fill[static_cast<std::size_t>(c * nb + b)];
            const std::uint64_t start = off;
            off += f;
            f = start;
            colptr_[run_at(c, b)] = static_cast<std::uint32_t>(start);
        }
        colptr_[run_at(c, nb)] = static_cast<std::uint32_t>(off);
    }
    for (std::int64_t r = 0; r < out; ++r)
        for (auto k = indptr[static_cast<std::size_t>(r)];
             k < indptr[static_cast<std::size_t>(r) + 1]; ++k) {
            const float v = values[static_cast<std::size_t>(k)];
            if (v == 0.0f) continue;
            const std::int64_t b = r / kBlock;
            auto& f = fill[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)] * nb + b)];
            syn[f] = {static_cast<std::uint32_t>(r - row_base(b)), v};
            ++f;
        }
    compact(syn);
}

std::vector<std::int64_t> ColumnWeights::row_nnz() const {
    std::vector<std::int64_t> n(static_cast<std::size_t>(out_), 0);
    for (std::int64_t c = 0; c < in_; ++c) {
        if (!sparse_) {
            const float* col = dense_column(c);
            for (std::int64_t r = 0; r < out_; ++r)
                n[static_cast<std::size_t>(r)] += col[r] != 0.0f;
            continue;
        }
        for (std::int64_t b = 0; b < nblocks(); ++b)
            for (auto k = colptr_[run_at(c, b)]; k < colptr_[run_at(c, b) + 1]; ++k)
                ++n[static_cast<std::size_t>(row_base(b) + rows_[k])];
    }
    return n;
}

float ColumnWeights::at(std::int64_t r, std::int64_t c) const {
    if (!sparse_) return dense_[static_cast<std::size_t>(c * out_ + r)];
    const std::int64_t kBlock = block_;
    const std::int64_t b = r / kBlock;
    for (auto k = colptr_[run_at(c, b)]; k < colptr_[run_at(c, b) + 1]; ++k)
        if (rows_[k] == r - row_base(b))
            return codebook_.size() == 1 ? codebook_[0]
                                         : (codes_.empty() ? vals_[k] : codebook_[codes_[k]]);
    return 0.0f;
}

template <class W>
[[gnu::always_inline]] inline void ColumnWeights::deliver(std::uint64_t k0, std::uint64_t k1,
                                                          float* yb, float x, bool unit,
                                                          W weight) const {
    const std::uint16_t* rr = rows_.data();
    if (unit && x > 0) {
        for (auto k = k0; k < k1; ++k) yb[rr[k]] += weight(k);
    } else if (unit) {
        for (auto k = k0; k < k1; ++k) yb[rr[k]] -= weight(k);
    } else {
        for (auto k = k0; k < k1; ++k) yb[rr[k]] += x * weight(k);
    }
}

// Inlined into add_column: a call per event and storage block would cost as much as a short run.
[[gnu::always_inline]] inline void ColumnWeights::deliver_run(std::uint64_t k0, std::uint64_t k1,
                                                              float* yb, float x, bool unit) const {
    if (codebook_.size() == 1) {
        const float w = codebook_[0];
        deliver(k0, k1, yb, x, unit, [w](std::uint64_t) { return w; });
    } else if (!codes_.empty()) {
        const std::uint8_t* cd = codes_.data();
        const float* cb = codebook_.data();
        deliver(k0, k1, yb, x, unit, [cd, cb](std::uint64_t k) { return cb[cd[k]]; });
    } else {
        const float* v = vals_.data();
        deliver(k0, k1, yb, x, unit, [v](std::uint64_t k) { return v[k]; });
    }
}

void ColumnWeights::add_column(std::int64_t c, float x, bool unit, float* y, const RowSplit& s,
                               std::int64_t b0, std::int64_t b1) const {
    const std::int64_t r0 = s.row_begin(b0), r1 = std::min(out_, s.row_begin(b1));
    if (!sparse_) {
        const float* col = dense_.data() + c * out_;
        if (unit && x > 0) {
            for (std::int64_t r = r0; r < r1; ++r) y[r] += col[r];
        } else if (unit) {
            for (std::int64_t r = r0; r < r1; ++r) y[r] -= col[r];
        } else {
            for (std::int64_t r = r0; r < r1; ++r) y[r] += x * col[r];
        }
        return;
    }
    // The synapses of rows [r0, r1) lie together: one delivery loop however many blocks a
    // thread runs, or one per storage block they cross (layers of more than kMaxBlock rows).
    const bool one = stride_ == 2;
    if (one && s.nblocks == 1) {  // one block over one stored run: the stored offsets
        deliver_run(colptr_[run_at(c, 0)], colptr_[run_at(c, 1)], y, x, unit);
        return;
    }
    const std::uint32_t* bd = s.bounds.data() + c * (s.nblocks + 1);
    const std::uint64_t k0 = bd[b0], k1 = bd[b1];
    const std::int64_t sb0 = one ? 0 : r0 / block_, sb1 = one ? 1 : (r1 - 1) / block_ + 1;
    for (std::int64_t sb = sb0; sb < sb1; ++sb)
        deliver_run(one ? k0 : std::max<std::uint64_t>(k0, colptr_[run_at(c, sb)]),
                    one ? k1 : std::min<std::uint64_t>(k1, colptr_[run_at(c, sb + 1)]),
                    y + row_base(sb), x, unit);
}

// Where row `r` of storage block sb would sit in column c's run if its rows were spread evenly.
std::size_t ColumnWeights::guess_at(std::int64_t c, std::int64_t sb, std::int64_t r) const {
    const std::uint64_t k0 = colptr_[run_at(c, sb)], k1 = colptr_[run_at(c, sb + 1)];
    const auto rows = static_cast<std::uint64_t>(std::min(block_, out_ - row_base(sb)));
    return static_cast<std::size_t>(k0 + (k1 - k0) * static_cast<std::uint64_t>(r) / rows);
}

// The first synapse of column c at or past block-local row r of storage block sb (rows ascend
// in a run): from the even-spread guess, walked to the boundary, so one cache miss per column.
std::uint32_t ColumnWeights::first_at_or_past(std::int64_t c, std::int64_t sb,
                                              std::uint16_t r) const {
    const std::size_t k0 = colptr_[run_at(c, sb)], k1 = colptr_[run_at(c, sb + 1)];
    std::size_t k = std::min(guess_at(c, sb, r), k1);
    while (k < k1 && rows_[k] < r) ++k;
    while (k > k0 && rows_[k - 1] >= r) --k;
    return static_cast<std::uint32_t>(k);
}

void ColumnWeights::split(std::int64_t parts, RowSplit& s) const {
    s.parts = parts < 1 ? 1 : parts;
    s.block = row_part_size(out_, s.parts);
    s.nblocks = (out_ + s.block - 1) / s.block;
    s.prefetch_events = 4;  // dense columns: a few events ahead cover the latency
    s.bounds.clear();
    if (!sparse_) return;
    const double run = static_cast<double>(rows_.size()) /
                       static_cast<double>(std::max<std::int64_t>(1, in_ * s.nblocks));
    s.prefetch_events =
        static_cast<std::size_t>(std::clamp(std::ceil(512.0 / std::max(run, 1.0)), 4.0, 16.0));
    const std::int64_t nb = s.nblocks;
    s.bounds.resize(static_cast<std::size_t>(in_ * (nb + 1)));
    for (std::int64_t c = 0; c < in_; ++c) {
        std::uint32_t* bd = s.bounds.data() + c * (nb + 1);
        bd[0] = colptr_[run_at(c, 0)];
        bd[nb] = colptr_[run_at(c, stride_ - 1)];
        // A later column's first guess fetched ahead: a run's rows are a cache miss apart
        // (this split is made on a run's first step, inside its time).
        if (c + 16 < in_ && nb > 1) {
            const std::int64_t sb = s.row_begin(1) / block_;
            __builtin_prefetch(rows_.data() + guess_at(c + 16, sb, s.row_begin(1) - row_base(sb)));
        }
        for (std::int64_t b = 1; b < nb; ++b) {
            const std::int64_t r = s.row_begin(b), sb = r / block_;
            bd[b] = first_at_or_past(c, sb, static_cast<std::uint16_t>(r - row_base(sb)));
        }
    }
}

}  // namespace ternion
