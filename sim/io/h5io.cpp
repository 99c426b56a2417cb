#include "sim/io/h5io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include "sim/core/error.hpp"
#include "sim/io/h5vet.hpp"

namespace ternion::h5 {

void quiet_errors() {
    static std::once_flag once;
    std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

namespace {

std::string parent_of(const std::string& p) {
    auto pos = p.find_last_of('/');
    if (pos == std::string::npos || pos == 0) return "/";
    return p.substr(0, pos);
}

// Memory type for a fixed-length string of `size` bytes: null-padded, in the file's character
// set. libhdf5 converts NULLTERM (whose last byte it reserves for the terminator), NULLPAD and
// SPACEPAD (trailing spaces dropped) into it, so a name that fills the width is read whole.
Handle fixed_string_type(hid_t file_type, std::size_t size) {
    Handle m(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(m.id(), size);
    H5Tset_cset(m.id(), H5Tget_cset(file_type));
    H5Tset_strpad(m.id(), H5T_STR_NULLPAD);
    return m;
}

}  // namespace

Reader::Reader(const std::string& path) : path_(path) {
    quiet_errors();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw InputError(path, "", "no such file");
    if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory");
    if (vetting()) vet_file(path);
    htri_t is_h5 = H5Fis_hdf5(path.c_str());
    if (is_h5 <= 0) throw InputError(path, "", "not an HDF5 file (or truncated)");
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) throw InputError(path, "", "cannot open as HDF5 (corrupt or truncated)");
    file_ = Handle(f, H5Fclose);
}

void Reader::fail(const std::string& field, const std::string& what) const {
    throw InputError(path_, field, what);
}

bool Reader::exists(const std::string& obj) const {
    if (obj == "/" || obj.empty()) return true;
    // Check each component so a missing parent is not an HDF5 error.
    std::string cur;
    std::size_t pos = 1;
    while (pos <= obj.size()) {
        auto next = obj.find('/', pos);
        if (next == std::string::npos) next = obj.size();
        cur = obj.substr(0, next);
        if (H5Lexists(file_.id(), cur.c_str(), H5P_DEFAULT) <= 0) return false;
        if (H5Oexists_by_name(file_.id(), cur.c_str(), H5P_DEFAULT) <= 0) return false;
        pos = next + 1;
    }
    return true;
}

namespace {
// Whether the object at `obj`, which exists, is of HDF5 object type `type`.
bool object_is(hid_t file, const std::string& obj, H5O_type_t type) {
    H5O_info_t oi;
    return H5Oget_info_by_name2(file, obj.c_str(), &oi, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 &&
           oi.type == type;
}
}  // namespace

bool Reader::is_group(const std::string& obj) const {
    return exists(obj) && object_is(file_.id(), obj, H5O_TYPE_GROUP);
}

bool Reader::is_dataset(const std::string& obj) const {
    return exists(obj) && object_is(file_.id(), obj, H5O_TYPE_DATASET);
}

std::vector<std::string> Reader::children(const std::string& group) const {
    if (!is_group(group)) fail(group, "missing group");
    Handle g(H5Gopen2(file_.id(), group.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g) fail(group, "cannot open group");
    H5G_info_t gi;
    if (H5Gget_info(g.id(), &gi) < 0) fail(group, "cannot read group");
    std::vector<std::string> names;
    for (hsize_t i = 0; i < gi.nlinks; ++i) {
        ssize_t len =
            H5Lget_name_by_idx(g.id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
        if (len < 0) fail(group, "cannot read link names");
        std::string name(static_cast<std::size_t>(len), '\0');
        H5Lget_name_by_idx(g.id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(),
                           static_cast<std::size_t>(len) + 1, H5P_DEFAULT);
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

Handle Reader::open_dataset(const std::string& ds) const {
    if (!is_dataset(ds)) fail(ds, exists(ds) ? "is not a dataset" : "missing dataset");
    Handle d(H5Dopen2(file_.id(), ds.c_str(), H5P_DEFAULT), H5Dclose);
    if (!d) fail(ds, "cannot open dataset");
    return d;
}

namespace {

// A number type's layout must fit its size: libhdf5 converts between types bit by bit from the
// offset, precision and (floats) field positions a file declares, and damaged ones make it read
// outside its buffers (a fuzzer-found SIGBUS in H5T__bit_copy converting an integer to float).
void check_number_type(const Reader& r, hid_t t, const std::string& ds) {
    const std::size_t size = H5Tget_size(t), bits = 8 * size;
    const std::size_t prec = H5Tget_precision(t);
    const int off = H5Tget_offset(t);
    bool ok = size > 0 && size <= 16 && prec > 0 && off >= 0 &&
              static_cast<std::size_t>(off) + prec <= bits;
    if (ok && H5Tget_class(t) == H5T_FLOAT) {
        std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
        ok = H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) >= 0 && esize > 0 && msize > 0 &&
             esize <= 32 && spos < prec && epos + esize <= prec && mpos + msize <= prec;
    }
    if (!ok)
        r.fail(ds, "number type of " + std::to_string(size) +
                       " bytes with a layout that does not "
                       "fit them (damaged file?)");
}

}  // namespace

DatasetInfo Reader::info(const std::string& ds) const {
    Handle d = open_dataset(ds);
    DatasetInfo inf;
    Handle space(H5Dget_space(d.id()), H5Sclose);
    int rank = H5Sget_simple_extent_ndims(space.id());
    if (rank < 0) fail(ds, "unreadable dataspace");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr);
    for (auto v : dims) inf.dims.push_back(static_cast<std::int64_t>(v));
    Handle type(H5Dget_type(d.id()), H5Tclose);
    H5T_class_t cls = H5Tget_class(type.id());
    inf.type_size = H5Tget_size(type.id());
    if (cls == H5T_INTEGER) {
        check_number_type(*this, type.id(), ds);
        inf.kind = Kind::integer;
        inf.is_signed = H5Tget_sign(type.id()) == H5T_SGN_2;
    } else if (cls == H5T_FLOAT) {
        check_number_type(*this, type.id(), ds);
        inf.kind = Kind::floating;
    } else if (cls == H5T_STRING) {
        inf.kind = Kind::string;
    } else if (cls == H5T_ENUM) {
        Handle base(H5Tget_super(type.id()), H5Tclose);
        if (base && H5Tget_class(base.id()) == H5T_INTEGER) check_number_type(*this, base.id(), ds);
        inf.kind = Kind::other;
        inf.is_enum = base && H5Tget_class(base.id()) == H5T_INTEGER && H5Tget_size(base.id()) == 1;
    } else {
        inf.kind = Kind::other;
    }
    return inf;
}

namespace {

// Data a dataset declares but does not store: unwritten chunks read as the fill value, so a
// 20 KB file can declare gigabytes. Deflate cannot pack more than about 1032:1, so a dataset
// declaring far more than that over what it stores is refused before anything is allocated.
void check_stored(const Reader& r, hid_t dset, const std::string& ds) {
    Handle space(H5Dget_space(dset), H5Sclose);
    Handle type(H5Dget_type(dset), H5Tclose);
    const auto n = static_cast<double>(H5Sget_simple_extent_npoints(space.id()));
    const double declared = n * static_cast<double>(H5Tget_size(type.id()));
    const auto stored = static_cast<double>(H5Dget_storage_size(dset));
    if (declared > double(64 << 20) && declared > 2000 * stored)
        r.fail(ds, "declares " + std::to_string(static_cast<std::uint64_t>(declared)) +
                       " bytes but stores " + std::to_string(static_cast<std::uint64_t>(stored)) +
                       " (damaged or hostile file?)");
}

// The size of the file holding dset (0 when unknown): stored data must lie inside it.
hsize_t file_bytes(hid_t dset) {
    Handle file(H5Iget_file_id(dset), H5Fclose);
    hsize_t size = 0;
    if (!file || H5Fget_filesize(file.id(), &size) < 0) return 0;
    return size;
}

// Data said to be stored beyond the end of the file is a damaged address or size: libhdf5
// would size its buffers from it and then fail to read (a 4 KB file declaring 1 GiB).
void check_in_file(const Reader& r, const std::string& ds, haddr_t addr, double bytes,
                   hsize_t file_size) {
    if (file_size == 0 || addr == HADDR_UNDEF) return;
    if (static_cast<double>(addr) + bytes > static_cast<double>(file_size))
        r.fail(ds, "stored data (" + std::to_string(static_cast<std::uint64_t>(bytes)) +
                       " bytes at offset " + std::to_string(addr) + ") ends beyond the file's " +
                       std::to_string(file_size) + " bytes (damaged or truncated file?)");
}

// libhdf5 1.10 trusts the size a compact layout message gives its data: a damaged layout
// message (its version byte changed, so a contiguous layout is read as an empty compact one)
// makes H5Dread copy the dataset's full size out of a smaller buffer (SIGSEGV). A compact
// dataset must store exactly its extent, a contiguous one (once allocated) at least that.
void check_whole(const Reader& r, hid_t dset, const std::string& ds, bool compact) {
    Handle space(H5Dget_space(dset), H5Sclose);
    Handle type(H5Dget_type(dset), H5Tclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.id());
    if (n < 0) r.fail(ds, "unreadable dataspace");
    const auto declared = static_cast<double>(n) * static_cast<double>(H5Tget_size(type.id()));
    const auto stored = static_cast<double>(H5Dget_storage_size(dset));
    if (compact ? stored != declared : (stored != 0 && stored < declared))
        r.fail(ds, std::string(compact ? "compact" : "contiguous") + " storage holds " +
                       std::to_string(static_cast<std::uint64_t>(stored)) +
                       " bytes, the dataset needs " +
                       std::to_string(static_cast<std::uint64_t>(declared)) + " (damaged file?)");
    if (!compact && stored != 0)
        check_in_file(r, ds, H5Dget_offset(dset), declared, file_bytes(dset));
}

// libhdf5 trusts a chunk layout message: a chunk larger than a fixed-size dataset (one damaged
// byte) makes H5Dread write past its buffers. Checked before every read, with the storage.
// An unfiltered chunk is stored whole: libhdf5 1.10 trusts the size its chunk index gives and
// copies a full chunk out of a smaller buffer (a heap over-read found by fuzzing). Checked once
// per dataset and reader. libhdf5 1.10 finds the i-th chunk (H5Dget_chunk_info, also
// H5Dget_chunk_info_by_coord) by walking the index from its start, so beyond 1024 stored chunks
// one walk sums them instead (H5Dget_storage_size): a damaged size shows in the total unless
// another chunk's damage cancels it.
void check_chunk_sizes(const Reader& r, hid_t dset, const std::string& ds, hsize_t chunk_bytes) {
    Handle space(H5Dget_space(dset), H5Sclose);
    hsize_t n = 0;
    if (H5Dget_num_chunks(dset, space.id(), &n) < 0)
        r.fail(ds, "unreadable chunk index (damaged file?)");
    if (n > 1024) {
        const hsize_t total = H5Dget_storage_size(dset);
        if (total != n * chunk_bytes)
            r.fail(ds, std::to_string(n) + " chunks store " + std::to_string(total) + " bytes, " +
                           std::to_string(n) + " unfiltered chunks have " +
                           std::to_string(n * chunk_bytes) + " (damaged file?)");
        return;
    }
    std::vector<hsize_t> offset(H5S_MAX_RANK + 1);
    const hsize_t in_file = file_bytes(dset);
    for (hsize_t i = 0; i < n; ++i) {
        unsigned mask = 0;
        haddr_t addr = 0;
        hsize_t size = 0;
        if (H5Dget_chunk_info(dset, space.id(), i, offset.data(), &mask, &addr, &size) < 0)
            r.fail(ds, "unreadable chunk index (damaged file?)");
        if (size != chunk_bytes)
            r.fail(ds, "chunk " + std::to_string(i) + " stores " + std::to_string(size) +
                           " bytes, an unfiltered chunk has " + std::to_string(chunk_bytes) +
                           " (damaged file?)");
        check_in_file(r, ds, addr, static_cast<double>(size), in_file);
    }
}

void check_layout(const Reader& r, hid_t dset, const std::string& ds) {
    Handle dcpl(H5Dget_create_plist(dset), H5Pclose);
    if (!dcpl) r.fail(ds, "unreadable storage layout");
    const H5D_layout_t layout = H5Pget_layout(dcpl.id());
    if (layout == H5D_COMPACT || layout == H5D_CONTIGUOUS)
        check_whole(r, dset, ds, layout == H5D_COMPACT);
    if (layout != H5D_CHUNKED) return check_stored(r, dset, ds);
    Handle space(H5Dget_space(dset), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space.id());
    if (rank < 0 || rank > H5S_MAX_RANK) r.fail(ds, "unreadable dataspace");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), maxd(dims.size());
    std::vector<hsize_t> chunk(H5S_MAX_RANK + 1, 0);
    H5Sget_simple_extent_dims(space.id(), dims.data(), maxd.data());
    if (H5Pget_chunk(dcpl.id(), H5S_MAX_RANK + 1, chunk.data()) != rank)
        r.fail(ds, "chunk layout does not match the dataset's rank (damaged file?)");
    for (std::size_t k = 0; k < dims.size(); ++k) {
        const bool fixed = maxd[k] != H5S_UNLIMITED;
        if (chunk[k] == 0 || (fixed && chunk[k] > std::max(dims[k], maxd[k])))
            r.fail(ds, "chunk dimension " + std::to_string(chunk[k]) +
                           " does not fit dataset "
                           "dimension " +
                           std::to_string(dims[k]) + " (damaged file?)");
    }
    if (H5Pget_nfilters(dcpl.id()) == 0 && r.first_look(ds)) {
        Handle type(H5Dget_type(dset), H5Tclose);
        hsize_t bytes = H5Tget_size(type.id());
        for (int k = 0; k < rank; ++k) bytes *= chunk[static_cast<std::size_t>(k)];
        check_chunk_sizes(r, dset, ds, bytes);
    }
    check_stored(r, dset, ds);
}

}  // namespace

bool Reader::first_look(const std::string& ds) const {
    return looked_.insert(ds).second;
}

void Reader::check_storage(const std::string& ds) const {
    Handle d = open_dataset(ds);
    check_layout(*this, d.id(), ds);
}

namespace {

template <class T>
std::vector<T> read_numeric(const Reader& r, hid_t file, const std::string& ds, hid_t mem_type,
                            DatasetInfo* out_info) {
    DatasetInfo inf = r.info(ds);
    if (inf.kind != Kind::integer && inf.kind != Kind::floating)
        r.fail(ds, "expected a numeric dataset");
    std::int64_t n = 1;
    for (auto d : inf.dims) {
        if (d < 0 || (d > 0 && n > kMaxElements / d)) r.fail(ds, "absurd declared size");
        n *= d;
    }
    if (n > kMaxElements) r.fail(ds, "absurd declared size " + shape_str(inf.dims));
    Handle d(H5Dopen2(file, ds.c_str(), H5P_DEFAULT), H5Dclose);
    if (n > 0) check_layout(r, d.id(), ds);  // before the buffer is sized from the header
    std::vector<T> v(static_cast<std::size_t>(n));
    if (n > 0 && H5Dread(d.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0)
        r.fail(ds, "read failed (corrupt or truncated data)");
    if (out_info) *out_info = inf;
    return v;
}

}  // namespace

std::vector<double> Reader::read_doubles(const std::string& ds, DatasetInfo* inf) const {
    return read_numeric<double>(*this, file_.id(), ds, H5T_NATIVE_DOUBLE, inf);
}
std::vector<float> Reader::read_floats(const std::string& ds, DatasetInfo* inf) const {
    return read_numeric<float>(*this, file_.id(), ds, H5T_NATIVE_FLOAT, inf);
}
std::vector<std::int64_t> Reader::read_ints(const std::string& ds, DatasetInfo* inf) const {
    DatasetInfo i = info(ds);
    if (i.kind == Kind::floating) {
        // Accept integral floats (some exporters store ints as float arrays).
        auto d = read_doubles(ds, inf);
        std::vector<std::int64_t> r(d.size());
        for (std::size_t k = 0; k < d.size(); ++k) {
            if (!std::isfinite(d[k]) || d[k] != std::floor(d[k]) || std::fabs(d[k]) > 9e15)
                fail(ds, "expected integer values");
            r[k] = static_cast<std::int64_t>(d[k]);
        }
        return r;
    }
    return read_numeric<std::int64_t>(*this, file_.id(), ds, H5T_NATIVE_INT64, inf);
}
std::vector<std::int8_t> Reader::read_int8(const std::string& ds, DatasetInfo* inf) const {
    return read_numeric<std::int8_t>(*this, file_.id(), ds, H5T_NATIVE_INT8, inf);
}

namespace {
// Which part of a dataset to read: rows [start, start + count) and, when count1 >= 0, only
// [start1, start1 + count1) along the second axis.
struct Slab {
    std::int64_t start = 0, count = 0, start1 = 0, count1 = -1;
};

// A slab of ds into out (capacity elements) or, when out is null, into a new vector (returned).
template <class T>
std::vector<T> read_rows(const Reader& r, hid_t file, const std::string& ds, Slab slab,
                         hid_t mem_type, T* out = nullptr, std::size_t capacity = 0) {
    DatasetInfo inf = r.info(ds);
    if (inf.dims.empty() || slab.start < 0 || slab.count < 0 ||
        slab.start + slab.count > inf.dims[0])
        r.fail(ds, "row range out of bounds");
    if (slab.count1 >= 0 &&
        (inf.dims.size() < 2 || slab.start1 < 0 || slab.start1 + slab.count1 > inf.dims[1]))
        r.fail(ds, "column range out of bounds");
    Handle d(H5Dopen2(file, ds.c_str(), H5P_DEFAULT), H5Dclose);
    Handle fspace(H5Dget_space(d.id()), H5Sclose);
    std::vector<hsize_t> st(inf.dims.size(), 0), cnt(inf.dims.begin(), inf.dims.end());
    st[0] = static_cast<hsize_t>(slab.start);
    cnt[0] = static_cast<hsize_t>(slab.count);
    if (slab.count1 >= 0) {
        st[1] = static_cast<hsize_t>(slab.start1);
        cnt[1] = static_cast<hsize_t>(slab.count1);
    }
    std::int64_t n = 1;
    for (auto c : cnt) n *= static_cast<std::int64_t>(c);
    if (out && static_cast<std::size_t>(n) > capacity)
        r.fail(ds, "rows larger than the buffer given");
    if (n == 0) return {};
    check_layout(r, d.id(), ds);  // before a buffer is sized from the header
    std::vector<T> v;
    if (!out) {
        v.resize(static_cast<std::size_t>(n));
        out = v.data();
    }
    H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, st.data(), nullptr, cnt.data(), nullptr);
    Handle mspace(H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr), H5Sclose);
    if (H5Dread(d.id(), mem_type, mspace.id(), fspace.id(), H5P_DEFAULT, out) < 0)
        r.fail(ds, "read failed (corrupt or truncated data)");
    return v;
}
}  // namespace

std::vector<std::int8_t> Reader::read_int8_rows(const std::string& ds, std::int64_t start,
                                                std::int64_t count) const {
    return read_rows<std::int8_t>(*this, file_.id(), ds, {start, count}, H5T_NATIVE_INT8);
}
std::vector<float> Reader::read_float_rows(const std::string& ds, std::int64_t start,
                                           std::int64_t count) const {
    return read_rows<float>(*this, file_.id(), ds, {start, count}, H5T_NATIVE_FLOAT);
}
void Reader::read_float_rows(const std::string& ds, std::int64_t start, std::int64_t count,
                             float* out, std::size_t capacity) const {
    read_rows<float>(*this, file_.id(), ds, {start, count}, H5T_NATIVE_FLOAT, out, capacity);
}

std::vector<double> Reader::read_double_rows(const std::string& ds, std::int64_t start,
                                             std::int64_t count) const {
    return read_double_block(ds, start, count, 0, -1);
}

std::vector<double> Reader::read_double_block(const std::string& ds, std::int64_t start,
                                              std::int64_t count, std::int64_t start1,
                                              std::int64_t count1) const {
    const Slab slab{start, count, start1, count1};
    const DatasetInfo inf = info(ds);
    if (inf.is_enum) {
        // h5py's bool: an enum over int8. Read the raw bytes through the enum type itself.
        Handle d = open_dataset(ds);
        Handle ft(H5Dget_type(d.id()), H5Tclose);
        Handle mt(H5Tget_native_type(ft.id(), H5T_DIR_ASCEND), H5Tclose);
        auto raw = read_rows<std::int8_t>(*this, file_.id(), ds, slab, mt.id());
        return {raw.begin(), raw.end()};
    }
    if (inf.kind != Kind::integer && inf.kind != Kind::floating)
        fail(ds, "expected a numeric or bool dataset");
    return read_rows<double>(*this, file_.id(), ds, slab, H5T_NATIVE_DOUBLE);
}

std::vector<std::string> Reader::read_strings(const std::string& ds, Shape* dims_out) const {
    DatasetInfo inf = info(ds);
    if (inf.kind != Kind::string) fail(ds, "expected a string dataset");
    Handle d = open_dataset(ds);
    Handle ftype(H5Dget_type(d.id()), H5Tclose);
    std::int64_t n = 1;
    for (auto v : inf.dims) {
        if (v < 0 || (v > 0 && n > 100000000 / v)) fail(ds, "absurd declared size");
        n *= v;
    }
    if (n > 0) check_layout(*this, d.id(), ds);
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(n));
    if (H5Tis_variable_str(ftype.id()) > 0) {
        Handle mtype(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(mtype.id(), H5T_VARIABLE);
        H5Tset_cset(mtype.id(), H5Tget_cset(ftype.id()));
        std::vector<char*> buf(static_cast<std::size_t>(n), nullptr);
        if (n > 0 && H5Dread(d.id(), mtype.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0)
            fail(ds, "read failed");
        for (auto* s : buf) out.emplace_back(s ? s : "");
        Handle space(H5Dget_space(d.id()), H5Sclose);
        if (n > 0) H5Dvlen_reclaim(mtype.id(), space.id(), H5P_DEFAULT, buf.data());
    } else {
        std::size_t sz = H5Tget_size(ftype.id());
        if (sz == 0) fail(ds, "zero-width strings");
        Handle mtype = fixed_string_type(ftype.id(), sz);
        std::vector<char> buf(static_cast<std::size_t>(n) * sz + 1, '\0');
        if (n > 0 && H5Dread(d.id(), mtype.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0)
            fail(ds, "read failed");
        for (std::int64_t i = 0; i < n; ++i) {
            const char* p = buf.data() + static_cast<std::size_t>(i) * sz;
            std::size_t len = 0;
            while (len < sz && p[len] != '\0') ++len;
            out.emplace_back(p, len);
        }
    }
    if (dims_out) *dims_out = inf.dims;
    return out;
}

std::string Reader::read_string(const std::string& ds) const {
    auto v = read_strings(ds);
    if (v.size() != 1) fail(ds, "expected a single string");
    return v[0];
}

double Reader::read_scalar(const std::string& ds) const {
    DatasetInfo inf;
    auto v = read_doubles(ds, &inf);
    if (v.size() != 1) fail(ds, "expected a scalar, got shape " + shape_str(inf.dims));
    return v[0];
}

namespace {

// The attribute obj@name of `r`'s file, or an invalid handle if absent ("/" is always there).
Handle open_attr(const Reader& r, const std::string& obj, const std::string& name) {
    if ((obj != "/" && !r.exists(obj)) ||
        H5Aexists_by_name(r.file_id(), obj.c_str(), name.c_str(), H5P_DEFAULT) <= 0)
        return {};
    return Handle(H5Aopen_by_name(r.file_id(), obj.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                  H5Aclose);
}

// True for a scalar or one-element attribute: reading a longer one into one value would
// overrun the buffer.
bool single_value(const Handle& a) {
    Handle space(H5Aget_space(a.id()), H5Sclose);
    return H5Sget_simple_extent_npoints(space.id()) == 1;
}

}  // namespace

std::optional<std::vector<std::int64_t>> Reader::attr_ints(const std::string& obj,
                                                           const std::string& name) const {
    Handle a = open_attr(*this, obj, name);
    if (!a) return std::nullopt;
    Handle space(H5Aget_space(a.id()), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.id());
    if (n < 0 || n > (1 << 24)) fail(obj + "@" + name, "unreadable attribute");
    Handle ftype(H5Aget_type(a.id()), H5Tclose);
    if (H5Tget_class(ftype.id()) != H5T_INTEGER) fail(obj + "@" + name, "expected integer values");
    std::vector<std::int64_t> out(static_cast<std::size_t>(n), 0);
    if (n > 0 && H5Aread(a.id(), H5T_NATIVE_INT64, out.data()) < 0)
        fail(obj + "@" + name, "expected integer values");
    return out;
}

std::vector<std::string> Reader::attr_names(const std::string& obj) const {
    std::vector<std::string> names;
    if (obj != "/" && !exists(obj)) return names;
    Handle o(H5Oopen(file_.id(), obj.c_str(), H5P_DEFAULT), H5Oclose);
    if (!o) return names;
    hsize_t at = 0;  // H5Aiterate2 exists in HDF5 1.10 (Debian 12) and later alike
    H5Aiterate2(
        o.id(), H5_INDEX_NAME, H5_ITER_INC, &at,
        [](hid_t, const char* n, const H5A_info_t*, void* data) -> herr_t {
            static_cast<std::vector<std::string>*>(data)->emplace_back(n);
            return 0;
        },
        &names);
    return names;
}

std::uint64_t Reader::stored_bytes(const std::string& ds) const {
    if (!is_dataset(ds)) return 0;
    Handle d(H5Dopen2(file_.id(), ds.c_str(), H5P_DEFAULT), H5Dclose);
    return d ? H5Dget_storage_size(d.id()) : 0;
}

std::optional<std::string> Reader::attr_string(const std::string& obj,
                                               const std::string& name) const {
    Handle a = open_attr(*this, obj, name);
    if (!a || !single_value(a)) return std::nullopt;
    Handle ftype(H5Aget_type(a.id()), H5Tclose);
    if (H5Tget_class(ftype.id()) != H5T_STRING) return std::nullopt;
    if (H5Tis_variable_str(ftype.id()) > 0) {
        Handle mtype(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(mtype.id(), H5T_VARIABLE);
        H5Tset_cset(mtype.id(), H5Tget_cset(ftype.id()));  // UTF-8 attributes need a matching cset
        char* s = nullptr;
        if (H5Aread(a.id(), mtype.id(), &s) < 0) return std::nullopt;
        std::string r = s ? s : "";
        H5free_memory(s);
        return r;
    }
    std::size_t sz = H5Tget_size(ftype.id());
    if (sz == 0) return std::string();
    Handle mtype = fixed_string_type(ftype.id(), sz);
    std::string r(sz, '\0');
    if (H5Aread(a.id(), mtype.id(), r.data()) < 0) return std::nullopt;
    r.resize(std::strlen(r.c_str()));
    return r;
}

std::optional<double> Reader::attr_double(const std::string& obj, const std::string& name) const {
    Handle a = open_attr(*this, obj, name);
    if (!a || !single_value(a)) return std::nullopt;
    Handle ftype(H5Aget_type(a.id()), H5Tclose);
    auto cls = H5Tget_class(ftype.id());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT) return std::nullopt;
    double v = 0;
    if (H5Aread(a.id(), H5T_NATIVE_DOUBLE, &v) < 0) return std::nullopt;
    return v;
}

// ---------------------------------------------------------------- Writer

// The file is built in memory (HDF5's core driver, no backing store) and written to its path
// by close() in one pass of our own. libhdf5 never writes to the disk itself: a file whose flush
// failed on a full disk stays half-open inside libhdf5, and its exit handler then crashes the
// process (a Python session included). The core driver's buffer is allocated through these
// callbacks, so close() writes it where it lies, without a copy.
struct Writer::Image {
    void* mem = nullptr;  // the driver's buffer
    bool keep = false;    // the driver's free at closing leaves it to close(), which writes it
    ~Image() {
        if (keep) std::free(mem);
    }
};

namespace {

void* image_malloc(std::size_t size, H5FD_file_image_op_t, void* udata) {
    auto* im = static_cast<Writer::Image*>(udata);
    return im->mem = std::malloc(size);
}
void* image_memcpy(void* dest, const void* src, std::size_t size, H5FD_file_image_op_t, void*) {
    return std::memcpy(dest, src, size);
}
void* image_realloc(void* ptr, std::size_t size, H5FD_file_image_op_t, void* udata) {
    auto* im = static_cast<Writer::Image*>(udata);
    void* p = std::realloc(ptr, size);
    if (p) im->mem = p;
    return p;
}
herr_t image_free(void* ptr, H5FD_file_image_op_t, void* udata) {
    auto* im = static_cast<Writer::Image*>(udata);
    if (ptr == im->mem) {
        if (im->keep) return 0;
        im->mem = nullptr;
    }
    std::free(ptr);
    return 0;
}
void* udata_copy(void* udata) {
    return udata;  // the Writer owns it; property-list copies share it
}
herr_t udata_free(void*) {
    return 0;
}

// `n` bytes to `path` (already created, exclusively, by the caller): "" or why not.
std::string write_whole(const std::string& path, const char* data, std::size_t n) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return std::strerror(errno);
    std::string why;
    for (std::size_t done = 0; done < n && why.empty();) {
        const ssize_t w = ::write(fd, data + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            why = w < 0 ? std::strerror(errno) : "short write";
        else
            done += static_cast<std::size_t>(w);
    }
    if (::close(fd) != 0 && why.empty()) why = std::strerror(errno);
    return why;
}

}  // namespace

Writer::Writer(const std::string& path) : path_(path), image_(std::make_unique<Image>()) {
    quiet_errors();
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5FD_file_image_callbacks_t cb{image_malloc, image_memcpy, image_realloc, image_free,
                                   udata_copy,   udata_free,   image_.get()};
    // Strong close: closing the file closes any object left open, so the driver's closing
    // free (after which close() writes and frees the buffer) comes at H5Fclose and not later.
    if (!fapl || H5Pset_fapl_core(fapl.id(), std::size_t{1} << 20, 0) < 0 ||
        H5Pset_fclose_degree(fapl.id(), H5F_CLOSE_STRONG) < 0 ||
        H5Pset_file_image_callbacks(fapl.id(), &cb) < 0)
        throw InputError(path, "", "cannot set up the HDF5 file in memory");
    // The path is opened now, so that one that cannot be written fails before any work.
    if (const int fd =
            ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        fd < 0)
        throw InputError(path, "", std::string("cannot create: ") + std::strerror(errno));
    else
        ::close(fd);
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id());
    if (f < 0) throw InputError(path, "", "cannot create HDF5 file");
    file_ = Handle(f, H5Fclose);
}

Writer::~Writer() {
    // Not closed yet: written now unless abandoned (an exception is passing through the writer,
    // or close() failed; the caller removes the file). Errors here are not reported: callers
    // that report them call close().
    if (file_ && !failed_ && std::uncaught_exceptions() <= exceptions_) {
        try {
            close();
        } catch (...) {
        }
    }
    file_.reset();  // the in-memory file: closing it touches no disk
}

bool files_left_unclosed() {
    return false;  // libhdf5 never holds a file on disk (Writer builds files in memory)
}

void Writer::close() {
    if (!file_) return;
    // The image's size (its end of allocation: the driver's buffer grows in whole increments).
    const ssize_t size =
        H5Fflush(file_.id(), H5F_SCOPE_GLOBAL) < 0 ? -1 : H5Fget_file_image(file_.id(), nullptr, 0);
    std::vector<char> copy;
    if (size >= 0 && !image_->mem && size > 0) {
        // The driver did not allocate through the callbacks: a copy of its image instead.
        copy.resize(static_cast<std::size_t>(size));
        if (H5Fget_file_image(file_.id(), copy.data(), copy.size()) < 0) copy.clear();
    }
    // Closed first, so that the image is the closed file's (its superblock's flags cleared).
    image_->keep = true;
    if (size < 0 || H5Fclose(file_.release()) < 0 ||
        (!image_->mem && copy.size() != size_t(size))) {
        failed_ = true;
        throw InputError(path_, "", "cannot finish the HDF5 file in memory");
    }
    const char* data = image_->mem ? static_cast<const char*>(image_->mem) : copy.data();
    const std::string why = write_whole(path_, data, static_cast<std::size_t>(size));
    std::free(image_->mem);
    image_->mem = nullptr;
    if (!why.empty()) {
        failed_ = true;
        throw InputError(path_, "", "write failed (" + why + "; disk full?)");
    }
}

Handle untimed(hid_t plist_class) {
    Handle p(H5Pcreate(plist_class), H5Pclose);
    H5Pset_obj_track_times(p.id(), 0);
    return p;
}

void create_groups(hid_t file, const std::string& file_name, const std::string& path) {
    if (path.empty() || path == "/") return;
    const Handle gcpl = untimed(H5P_GROUP_CREATE);
    std::size_t pos = 1;
    while (pos <= path.size()) {
        auto next = path.find('/', pos);
        if (next == std::string::npos) next = path.size();
        std::string cur = path.substr(0, next);
        if (H5Lexists(file, cur.c_str(), H5P_DEFAULT) <= 0) {
            Handle g(H5Gcreate2(file, cur.c_str(), H5P_DEFAULT, gcpl.id(), H5P_DEFAULT), H5Gclose);
            if (!g) throw InputError(file_name, cur, "cannot create group");
        }
        pos = next + 1;
    }
}

void Writer::group(const std::string& path) {
    create_groups(file_.id(), path_, path);
}

void Writer::write_raw(const std::string& ds, hid_t mem_type, const void* data, const Shape& dims,
                       bool compress, std::size_t elem_size) {
    group(parent_of(ds));
    std::vector<hsize_t> d(dims.begin(), dims.end());
    Handle space(H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr), H5Sclose);
    if (dims.empty()) space = Handle(H5Screate(H5S_SCALAR), H5Sclose);
    Handle dcpl = untimed(H5P_DATASET_CREATE);
    std::int64_t n = numel(dims);
    if (compress && !dims.empty() && n > 0) {
        // Chunks of about 256 KiB along the leading axes; the last axis stays whole.
        std::vector<hsize_t> chunk(d.begin(), d.end());
        std::size_t target = std::max<std::size_t>(1, (256u << 10) / elem_size);
        for (std::size_t k = 0; k + 1 < chunk.size(); ++k) {
            std::size_t rest = 1;
            for (std::size_t j = k + 1; j < chunk.size(); ++j) rest *= chunk[j];
            std::size_t want = std::max<std::size_t>(1, target / std::max<std::size_t>(rest, 1));
            chunk[k] = std::min<hsize_t>(chunk[k], want);
        }
        for (auto& c : chunk) c = std::max<hsize_t>(c, 1);
        H5Pset_chunk(dcpl.id(), static_cast<int>(chunk.size()), chunk.data());
        H5Pset_deflate(dcpl.id(), 4);
    }
    Handle dset(H5Dcreate2(file_.id(), ds.c_str(), mem_type, space.id(), H5P_DEFAULT, dcpl.id(),
                           H5P_DEFAULT),
                H5Dclose);
    if (!dset) throw InputError(path_, ds, "cannot create dataset");
    if (n > 0 && H5Dwrite(dset.id(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        throw InputError(path_, ds, "write failed (disk full?)");
}

void Writer::write(const std::string& ds, const std::vector<float>& v, const Shape& dims, bool c) {
    write_raw(ds, H5T_NATIVE_FLOAT, v.data(), dims, c, sizeof(float));
}
void Writer::write(const std::string& ds, const float* v, std::size_t n, const Shape& dims,
                   bool c) {
    std::int64_t want = 1;
    for (auto d : dims) want *= d;
    if (static_cast<std::size_t>(want) != n)
        throw std::invalid_argument("h5 write " + ds + ": " + std::to_string(n) +
                                    " values for the shape given");
    write_raw(ds, H5T_NATIVE_FLOAT, v, dims, c, sizeof(float));
}
void Writer::write(const std::string& ds, const std::vector<double>& v, const Shape& dims, bool c) {
    write_raw(ds, H5T_NATIVE_DOUBLE, v.data(), dims, c, sizeof(double));
}
void Writer::write(const std::string& ds, const std::vector<std::int64_t>& v, const Shape& dims,
                   bool c) {
    write_raw(ds, H5T_NATIVE_INT64, v.data(), dims, c, sizeof(std::int64_t));
}
void Writer::write(const std::string& ds, const std::vector<std::int8_t>& v, const Shape& dims,
                   bool c) {
    write_raw(ds, H5T_NATIVE_INT8, v.data(), dims, c, 1);
}
void Writer::write(const std::string& ds, const std::vector<std::uint64_t>& v, const Shape& dims,
                   bool c) {
    write_raw(ds, H5T_NATIVE_UINT64, v.data(), dims, c, sizeof(std::uint64_t));
}

void Writer::write_string(const std::string& ds, const std::string& s) {
    group(parent_of(ds));
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.id(), H5T_VARIABLE);
    H5Tset_cset(type.id(), H5T_CSET_UTF8);
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    Handle dset(H5Dcreate2(file_.id(), ds.c_str(), type.id(), space.id(), H5P_DEFAULT,
                           untimed(H5P_DATASET_CREATE).id(), H5P_DEFAULT),
                H5Dclose);
    if (!dset) throw InputError(path_, ds, "cannot create dataset");
    const char* p = s.c_str();
    if (H5Dwrite(dset.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &p) < 0)
        throw InputError(path_, ds, "write failed");
}

void Writer::write_strings(const std::string& ds, const std::vector<std::string>& v,
                           const Shape& dims) {
    group(parent_of(ds));
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.id(), H5T_VARIABLE);
    H5Tset_cset(type.id(), H5T_CSET_UTF8);
    std::vector<hsize_t> d(dims.begin(), dims.end());
    Handle space(H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr), H5Sclose);
    Handle dset(H5Dcreate2(file_.id(), ds.c_str(), type.id(), space.id(), H5P_DEFAULT,
                           untimed(H5P_DATASET_CREATE).id(), H5P_DEFAULT),
                H5Dclose);
    if (!dset) throw InputError(path_, ds, "cannot create dataset");
    std::vector<const char*> p;
    for (auto& s : v) p.push_back(s.c_str());
    if (!p.empty() && H5Dwrite(dset.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()) < 0)
        throw InputError(path_, ds, "write failed");
}

namespace {
hid_t open_obj(hid_t file, const std::string& obj) {
    return H5Oopen(file, obj.empty() ? "/" : obj.c_str(), H5P_DEFAULT);
}

// Writes the scalar attribute obj@name of HDF5 type `type` from `value`, replacing one of that
// name; errors name `path`.
void write_scalar_attr(hid_t file, const std::string& path, const std::string& obj,
                       const std::string& name, hid_t type, const void* value) {
    Handle o(open_obj(file, obj), H5Oclose);
    if (!o) throw InputError(path, obj, "no such object for attribute " + name);
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    if (H5Aexists(o.id(), name.c_str()) > 0) H5Adelete(o.id(), name.c_str());
    Handle a(H5Acreate2(o.id(), name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT),
             H5Aclose);
    if (!a || H5Awrite(a.id(), type, value) < 0)
        throw InputError(path, obj + "@" + name, "cannot write attribute");
}
}  // namespace

void Writer::attr(const std::string& obj, const std::string& name, const std::string& value) {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.id(), H5T_VARIABLE);
    H5Tset_cset(type.id(), H5T_CSET_UTF8);
    const char* p = value.c_str();
    write_scalar_attr(file_.id(), path_, obj, name, type.id(), &p);
}

void Writer::attr(const std::string& obj, const std::string& name, double value) {
    write_scalar_attr(file_.id(), path_, obj, name, H5T_NATIVE_DOUBLE, &value);
}

void Writer::attr(const std::string& obj, const std::string& name, std::int64_t value) {
    write_scalar_attr(file_.id(), path_, obj, name, H5T_NATIVE_INT64, &value);
}

namespace {
// One pending temporary at a time per process is enough for the CLI; a fixed buffer keeps
// the signal handler free of allocation. Its state is an atomic the handler reads: the name is
// written only while the state is `none`, and while a temporary is being created (`creating`:
// whether the exclusive open made it is not known yet) a signal is deferred to the creator,
// which raises it again once the state says whether there is a file to remove.
enum TempState : int { none, creating, registered };
char g_pending_tmp[4096] = {0};
std::atomic<int> g_tmp_state{none};
std::atomic<int> g_deferred_signal{0};
void (*g_creating_hook)() = nullptr;  // tests: runs inside the window

void unregister_temporary() {
    g_tmp_state.store(none);
}
}  // namespace

bool remove_temporaries(int sig) noexcept {
    g_deferred_signal.store(sig);
    if (g_tmp_state.load() == creating) return false;  // the creator raises it again
    // Claimed here unless the creator left the window and claimed it first (then it raises).
    if (g_deferred_signal.exchange(0) == 0) return false;
    if (g_tmp_state.load() == registered) ::unlink(g_pending_tmp);
    return true;
}

void on_output_signal(int sig) noexcept {
    if (!remove_temporaries(sig)) return;
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void set_creating_hook(void (*hook)()) {
    g_creating_hook = hook;
}

std::string not_a_regular_file(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return "";                        // a new name
    if (S_ISLNK(st.st_mode) && ::stat(path.c_str(), &st) != 0) return "";  // a dangling link
    if (S_ISREG(st.st_mode)) return "";
    if (S_ISDIR(st.st_mode)) return "a directory";
    if (S_ISCHR(st.st_mode)) return "a character device";
    if (S_ISBLK(st.st_mode)) return "a block device";
    if (S_ISFIFO(st.st_mode)) return "a FIFO";
    if (S_ISSOCK(st.st_mode)) return "a socket";
    return "not a regular file";
}

namespace {

// Creates the hidden temporary beside `target` exclusively (O_CREAT | O_EXCL | O_NOFOLLOW, a
// random suffix): a name planted in the directory, a symlink to an input included, is never
// opened; another name is drawn instead. Returns its path, created empty.
std::string create_temporary(const std::filesystem::path& dir, const std::string& target_name,
                             const std::string& path) {
    std::random_device rd;
    for (int attempt = 0; attempt < 100; ++attempt) {
        char suffix[32];
        std::snprintf(suffix, sizeof suffix, "%d-%08x", static_cast<int>(::getpid()),
                      static_cast<unsigned>(rd()));
        const std::string name = "." + target_name + ".tmp-" + suffix;
        if (name.size() > 255)
            throw InputError(path, "", "file name too long for the temporary written beside it");
        const std::string tmp = (dir / name).string();
        if (tmp.size() >= sizeof g_pending_tmp)
            throw InputError(path, "", "path too long for the temporary written beside it");
        std::memcpy(g_pending_tmp, tmp.c_str(), tmp.size() + 1);  // the state is `none` here
        g_tmp_state.store(creating);
        if (g_creating_hook) g_creating_hook();
        const int fd =
            ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        const int err = errno;
        g_tmp_state.store(fd >= 0 ? registered : none);
        if (fd >= 0) ::close(fd);
        // A signal that came inside the window: now its handler knows what to remove.
        if (const int sig = g_deferred_signal.exchange(0)) std::raise(sig);
        if (fd >= 0) return tmp;
        errno = err;
        if (errno != EEXIST && errno != ELOOP)
            throw InputError(
                path, "",
                std::string("cannot create the temporary beside it: ") + std::strerror(errno));
    }
    throw InputError(path, "", "cannot create a temporary beside it: every name drawn was taken");
}

}  // namespace

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& fn) {
    namespace fs = std::filesystem;
    fs::path target(path);
    fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw InputError(path, "", "directory does not exist");
    // Only a regular file (or a new name) is ever replaced: renaming over a device or a FIFO
    // would destroy it (as root, /dev/null itself).
    if (const std::string what = not_a_regular_file(path); !what.empty())
        throw InputError(path, "", "is " + what + ", not a regular file; refusing to replace it");
    // Hidden temporary next to the target so the final rename stays on one filesystem.
    const std::string tmp = create_temporary(dir, target.filename().string(), path);
    const auto abandon = [&] {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        unregister_temporary();
    };
    try {
        fn(tmp);
        fs::rename(tmp, target, ec);
        if (ec) throw InputError(path, "", "cannot rename the finished file: " + ec.message());
        unregister_temporary();
    } catch (const InputError& e) {
        abandon();
        // An error writing the temporary is an error writing the output: name the output.
        if (e.file() == tmp) throw InputError(path, e.field(), e.detail());
        throw;
    } catch (...) {
        abandon();
        throw;
    }
}

}  // namespace ternion::h5
