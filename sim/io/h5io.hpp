// A thin RAII layer over the HDF5 C API for reading model/input files and writing traces.
// Every failure becomes an InputError naming the file and the dataset path; HDF5's own
// error printing is switched off so a bad file yields exactly one line.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/core/shape.hpp"

namespace ternion::h5 {

// Owns one hid_t and closes it with the right H5*close function.
class Handle {
  public:
    Handle() = default;
    Handle(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
    Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) {
            reset();
            id_ = o.id_;
            closer_ = o.closer_;
            o.id_ = H5I_INVALID_HID;
        }
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() { reset(); }
    void reset() {
        if (id_ >= 0 && closer_) closer_(id_);
        id_ = H5I_INVALID_HID;
    }
    hid_t id() const { return id_; }
    // Gives up ownership: the caller closes the identifier.
    hid_t release() {
        const hid_t id = id_;
        id_ = H5I_INVALID_HID;
        return id;
    }
    explicit operator bool() const { return id_ >= 0; }

  private:
    hid_t id_ = H5I_INVALID_HID;
    herr_t (*closer_)(hid_t) = nullptr;
};

enum class Kind { integer, floating, string, other };

struct DatasetInfo {
    Shape dims;  // empty for a scalar
    Kind kind = Kind::other;
    std::size_t type_size = 0;
    bool is_signed = true;
    bool is_enum = false;  // an HDF5 enum over 1-byte integers (h5py's bool), kind `other`
};

// Read access to one HDF5 file. Paths are absolute within the file ("/node/nodes/lif1/tau").
class Reader {
  public:
    // Throws InputError if missing or not HDF5; with vetting() on, the file is first read in a
    // child process (sim/io/h5vet.hpp).
    explicit Reader(const std::string& path);
    const std::string& path() const { return path_; }
    hid_t file_id() const { return file_.id(); }

    bool exists(const std::string& obj) const;
    bool is_group(const std::string& obj) const;
    bool is_dataset(const std::string& obj) const;
    std::vector<std::string> children(const std::string& group) const;  // sorted by name
    DatasetInfo info(const std::string& ds) const;
    // Refuses a dataset whose chunk layout does not fit it or that declares far more data than
    // it stores; every read does this, callers sizing buffers from info() call it first.
    void check_storage(const std::string& ds) const;

    std::vector<double> read_doubles(const std::string& ds, DatasetInfo* info = nullptr) const;
    std::vector<float> read_floats(const std::string& ds, DatasetInfo* info = nullptr) const;
    std::vector<std::int64_t> read_ints(const std::string& ds, DatasetInfo* info = nullptr) const;
    std::vector<std::int8_t> read_int8(const std::string& ds, DatasetInfo* info = nullptr) const;
    // Reads a hyperslab [start, start+count) along the first axis of an n-d dataset.
    std::vector<std::int8_t> read_int8_rows(const std::string& ds, std::int64_t start,
                                            std::int64_t count) const;
    // Rows as float64, from any integer, float or 1-byte enum (h5py bool) dataset.
    std::vector<double> read_double_rows(const std::string& ds, std::int64_t start,
                                         std::int64_t count) const;
    // The same for rows [start, start+count) and, within them, [start1, start1+count1) along
    // the second axis (a time-first spike tensor's samples): [count, count1, ...] row-major.
    std::vector<double> read_double_block(const std::string& ds, std::int64_t start,
                                          std::int64_t count, std::int64_t start1,
                                          std::int64_t count1) const;
    std::vector<float> read_float_rows(const std::string& ds, std::int64_t start,
                                       std::int64_t count) const;
    // The same into a caller's buffer of `capacity` floats (e.g. a LargeVector).
    void read_float_rows(const std::string& ds, std::int64_t start, std::int64_t count, float* out,
                         std::size_t capacity) const;
    std::string read_string(const std::string& ds) const;
    // Strings of a 1-d or 2-d string dataset (fixed or variable length), row-major.
    std::vector<std::string> read_strings(const std::string& ds, Shape* dims = nullptr) const;
    double read_scalar(const std::string& ds) const;  // a 0-d or 1-element dataset

    std::optional<std::string> attr_string(const std::string& obj, const std::string& name) const;
    std::optional<double> attr_double(const std::string& obj, const std::string& name) const;
    // An integer list attribute (any integer type, scalar or 1-d); nullopt if absent. Throws
    // naming obj@name if it is not integer or implausibly long.
    std::optional<std::vector<std::int64_t>> attr_ints(const std::string& obj,
                                                       const std::string& name) const;
    // Names of the attributes of `obj` (in name order); empty if `obj` does not exist.
    std::vector<std::string> attr_names(const std::string& obj) const;
    // Bytes a dataset takes in the file (after compression); 0 if it cannot be opened.
    std::uint64_t stored_bytes(const std::string& ds) const;

    [[noreturn]] void fail(const std::string& field, const std::string& what) const;
    // True the first time it is asked about `ds`: checks that cost a walk of a dataset's chunk
    // index run once per reader, not once per row read.
    bool first_look(const std::string& ds) const;

  private:
    Handle open_dataset(const std::string& ds) const;
    std::string path_;
    Handle file_;
    mutable std::set<std::string> looked_;
};

// Write access; used for traces and converted inputs. Chunked + gzip when `compress`. The file
// is assembled in memory and written to `path` by close() with plain writes, so a full disk is
// one clean error and never leaves libhdf5 holding a half-written file.
class Writer {
  public:
    struct Image;
    explicit Writer(const std::string& path);  // creates/truncates
    // Writes the file if close() was not reached, unless an exception is passing through (or
    // close() failed): then nothing more is written (its caller removes the file).
    ~Writer();
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    const std::string& path() const { return path_; }
    hid_t file_id() const { return file_.id(); }  // for H5Ocopy into this file
    void close();

    void group(const std::string& path);  // creates missing parents
    void write(const std::string& ds, const std::vector<float>& v, const Shape& dims,
               bool compress = true);
    // n floats at v (n must equal the product of dims).
    void write(const std::string& ds, const float* v, std::size_t n, const Shape& dims,
               bool compress = true);
    void write(const std::string& ds, const std::vector<double>& v, const Shape& dims,
               bool compress = true);
    void write(const std::string& ds, const std::vector<std::int64_t>& v, const Shape& dims,
               bool compress = true);
    void write(const std::string& ds, const std::vector<std::int8_t>& v, const Shape& dims,
               bool compress = true);
    void write(const std::string& ds, const std::vector<std::uint64_t>& v, const Shape& dims,
               bool compress = true);
    void write_string(const std::string& ds, const std::string& s);
    // A string array (variable-length UTF-8), e.g. NIR's (E, 2) edge list.
    void write_strings(const std::string& ds, const std::vector<std::string>& v, const Shape& dims);
    void attr(const std::string& obj, const std::string& name, const std::string& value);
    void attr(const std::string& obj, const std::string& name, double value);
    void attr(const std::string& obj, const std::string& name, std::int64_t value);

  private:
    void write_raw(const std::string& ds, hid_t mem_type, const void* data, const Shape& dims,
                   bool compress, std::size_t elem_size);
    std::string path_;
    std::unique_ptr<Image> image_;  // the in-memory file's buffer (declared before file_)
    Handle file_;
    bool failed_ = false;                          // close() failed: the file is abandoned
    int exceptions_ = std::uncaught_exceptions();  // unwinding at construction
};

// A creation property list of `plist_class` (H5P_DATASET_CREATE, H5P_GROUP_CREATE) that keeps
// no modification times: files written twice from the same data are the same bytes.
Handle untimed(hid_t plist_class);
// Creates the missing groups of `path` (untimed); errors name `file_name`.
void create_groups(hid_t file, const std::string& file_name, const std::string& path);

// Writes `path` atomically: `fn` writes a hidden temporary file in the same directory, created
// exclusively under a random name (never a planted file or link), which is renamed over `path`
// only when complete; any exception removes it and leaves `path` as it was. `path` must be a
// new name or a regular file (or a link to one): a device, FIFO, socket or directory is refused.
// Temporaries are registered so a signal handler can remove them (on_output_signal).
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& fn);
// "" when `path` is absent or a regular file (or a link to one), else what it is ("a FIFO",
// "a character device", ...).
std::string not_a_regular_file(const std::string& path);
// For a handler of signal `sig` (async-signal-safe: atomics and unlink only): removes the
// temporary of an unfinished atomic write and returns true, or returns false when the signal
// came while the temporary was being created: the creator then raises `sig` again itself.
bool remove_temporaries(int sig) noexcept;
// A handler for SIGINT, SIGTERM, SIGHUP, SIGQUIT: drops the half-written output, then dies by
// the signal (a non-zero status); an existing output is left as it was.
void on_output_signal(int sig) noexcept;
// Tests: a function run between a temporary's name being chosen and its exclusive creation.
void set_creating_hook(void (*hook)());

// Silences HDF5's automatic error stack printing (once per process).
void quiet_errors();

}  // namespace ternion::h5
