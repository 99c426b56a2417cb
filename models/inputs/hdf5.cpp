// HDF5 inputs: /spikes, /data, /frames, or one /inputs/<node>/ group per Input node.
#include "models/inputs/sources.hpp"
#include "sim/io/file_guard.hpp"
#include "sim/io/h5io.hpp"

namespace ternion {

namespace {

class H5Rows final : public RowSource {
  public:
    H5Rows(const h5::Reader& r, std::string ds) : r_(r), ds_(std::move(ds)) {
        auto inf = r.info(ds_);
        if (inf.kind != h5::Kind::integer && inf.kind != h5::Kind::floating && !inf.is_enum)
            r.fail(ds_, "expected a numeric or bool dataset");
        r.check_storage(ds_);
        dims_ = inf.dims;
    }
    Shape dims() const override { return dims_; }
    std::vector<double> block(std::int64_t start, std::int64_t count, std::int64_t start1,
                              std::int64_t count1) const override {
        return r_.read_double_block(ds_, start, count, start1, count1);
    }
    [[noreturn]] void fail(const std::string& what) const override { r_.fail(ds_, what); }
    std::string dataset() const override { return ds_; }

  private:
    const h5::Reader& r_;
    std::string ds_;
    Shape dims_;
};

std::unique_ptr<FileSource> open_spikes(const h5::Reader& r, const InputOptions& o,
                                        const std::string& ds, bool frames = false) {
    H5Rows rows(r, ds);
    return replay_rows(rows, r.path(), o, frames);
}

std::unique_ptr<FileSource> open_analog(const h5::Reader& r, const InputOptions& o,
                                        const std::string& ds) {
    auto inf = r.info(ds);
    if (inf.kind != h5::Kind::floating && inf.kind != h5::Kind::integer)
        r.fail(ds, "expected a numeric (float32) dataset");
    if (inf.dims.size() < 2) r.fail(ds, "expected [samples, ...shape], got " + shape_str(inf.dims));
    check_dims(r.path(), ds.c_str(), inf.dims, 4);
    r.check_storage(ds);
    const Shard held = held_samples(o, inf.dims[0]);
    // The held values as floats must fit before a (possibly compressed) dataset is inflated.
    check_memory_limit(
        static_cast<double>(resident_bytes()) +
            4.0 * static_cast<double>(held.count) *
                static_cast<double>(numel(Shape(inf.dims.begin() + 1, inf.dims.end()))),
        o.max_memory, "reading " + r.path() + " " + ds);
    auto data = std::make_shared<std::vector<float>>(r.read_float_rows(ds, held.first, held.count));
    // uint8 data are 8-bit images, read as value / 255 as IDX files are (one rule everywhere).
    if (inf.kind == h5::Kind::integer && inf.type_size == 1 && !inf.is_signed)
        for (float& v : *data) v /= 255.0f;
    return encode_values(r.path(), ds, inf.dims, data->data(), data, o, held);
}

}  // namespace

std::unique_ptr<InputSource> open_h5_input(const h5::Reader& r, const InputOptions& o,
                                           const std::string& group,
                                           const std::vector<std::int64_t>* labels) {
    const std::string sp = group + "/spikes", an = group + "/data", fr = group + "/frames";
    const bool has_sp = r.exists(sp), has_an = r.exists(an), has_fr = r.exists(fr);
    if (has_sp + has_an + has_fr > 1)
        r.fail(group, "has more than one of " + sp + ", " + an + " and " + fr + ": keep one");
    auto labelled = [&](auto src) -> std::unique_ptr<InputSource> {
        src->set_labels(labels ? *labels : read_labels(r, src->num_samples()));
        return src;
    };
    if (has_sp) return labelled(open_spikes(r, o, sp));
    if (has_an) return labelled(open_analog(r, o, an));
    if (has_fr) return labelled(open_spikes(r, o, fr, true));
    if (group.empty()) r.fail("", "no /spikes or /data dataset (nor /frames)");
    const bool flat = r.exists("/spikes") || r.exists("/data");
    r.fail(sp, "missing: a model with several Input nodes reads " + sp + " or " + an +
                   " for its Input node '" + group.substr(group.rfind('/') + 1) + "'" +
                   (flat ? " (/spikes and /data serve a model with one Input node)" : ""));
}

bool holds_node_groups(const h5::Reader& r) {
    return !r.exists("/spikes") && !r.exists("/data") && !r.exists("/frames") &&
           r.exists("/inputs");
}

}  // namespace ternion
