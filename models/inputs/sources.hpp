// Inside models/inputs only: what the per-format readers share. A reader turns its format into
// rows (RowSource) for the spike replayer, or into float32 values for the analog encoder; both
// are FileSources, which carry labels and say how the run header names them.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/inputs/inputs.hpp"
#include "sim/core/shard.hpp"

namespace ternion {

namespace h5 {
class Reader;
}

constexpr std::int64_t kMaxInputBytes = std::int64_t{8} << 30;

// Labels of `samples` samples: one non-negative class per sample.
void check_labels(const std::string& name, const Shape& dims, const std::vector<std::int64_t>& l,
                  std::int64_t samples);
std::vector<std::int64_t> read_labels(const h5::Reader& r, std::int64_t samples);
// Refuses empty or absurdly large tensors before anything is sized by them.
void check_dims(const std::string& name, const char* field, const Shape& dims,
                std::int64_t bytes_per_value);
// The samples one process reads: its shard of the run's range [first_sample, first_sample +
// samples), clamped to the file's `file_samples` (an out-of-range request reads nothing and is
// refused later, by the pipeline, naming the option).
Shard held_samples(const InputOptions& o, std::int64_t file_samples);
// The engine asks only for samples of the run, which a process holds: anything else is a bug.
void check_held(const Shard& held, std::int64_t s);
bool ends_with(const std::string& s, const std::string& e);

// A spike tensor's rows (slices along its first axis) as float64, from HDF5, .npy or an array:
// rows [start, start + count), and of each only [start1, start1 + count1) along the second
// axis, as [count, count1, ...] row-major.
class RowSource {
  public:
    virtual ~RowSource() = default;
    virtual Shape dims() const = 0;
    virtual std::vector<double> block(std::int64_t start, std::int64_t count, std::int64_t start1,
                                      std::int64_t count1) const = 0;
    [[noreturn]] virtual void fail(const std::string& what) const = 0;
    virtual std::string dataset() const = 0;  // what errors name: "/spikes", or "" (.npy)
};

// An input read from a file or an array: replayed spikes or frames, or encoded analog data.
class FileSource : public InputSource {
  public:
    // `file`, `field`: where the labels were read, when not this source's own file.
    void set_labels(std::vector<std::int64_t> l, std::string file = "", std::string field = "") {
        labels_ = std::move(l);
        labels_file_ = std::move(file);
        labels_field_ = std::move(field);
    }
    const std::vector<std::int64_t>& labels() const override { return labels_; }
    std::string labels_file() const override {
        return labels_file_.empty() ? describe() : labels_file_;
    }
    std::string labels_field() const override {
        return labels_field_.empty() ? InputSource::labels_field() : labels_field_;
    }
    // "replayed spikes (samples-first)", "poisson encoding", ... (input_label)
    virtual std::string label() const = 0;
    // "spikes", "frames", or the analog encoding's name (input_encoding)
    virtual std::string encoding_word() const = 0;

  private:
    std::vector<std::int64_t> labels_;
    std::string labels_file_, labels_field_;
};

// Spikes (or, with `frames`, analog frames) replayed from `rows`; only the held samples are read.
std::unique_ptr<FileSource> replay_rows(const RowSource& rows, const std::string& path,
                                        const InputOptions& o, bool frames = false);
// Analog data [samples, ...shape]; `data` holds the values of the `held` samples (by default
// all), kept alive by `owner` (may be null when the caller guarantees the lifetime). `field`
// names the dataset in errors.
std::unique_ptr<FileSource> encode_values(std::string name, std::string field, const Shape& dims,
                                          const float* data, std::shared_ptr<const void> owner,
                                          const InputOptions& o,
                                          std::optional<Shard> held = std::nullopt);

// The formats' openers.
std::unique_ptr<InputSource> open_idx(const std::string& path, const InputOptions& o);
std::unique_ptr<InputSource> open_npy(const std::string& path, const InputOptions& o);
// One Input node's dataset, `group`/spikes, /data or /frames ("" for the single-input ones),
// with the file's labels (or `labels`).
std::unique_ptr<InputSource> open_h5_input(const h5::Reader& r, const InputOptions& o,
                                           const std::string& group,
                                           const std::vector<std::int64_t>* labels = nullptr);
// A file of several Input nodes' inputs: /inputs/<node>/... and neither /spikes nor /data.
bool holds_node_groups(const h5::Reader& r);

}  // namespace ternion
