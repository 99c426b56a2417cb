#include "sim/io/h5vet.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <set>
#include <tuple>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/io/h5io.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define TERNION_VET_NO_AS_LIMIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TERNION_VET_NO_AS_LIMIT 1
#endif
#endif

namespace ternion::h5 {

namespace {

bool g_vetting = false;

// ---------------------------------------------------------------- child: read everything

// What the child tells the parent, in memory both share: the object it is reading (so a crash
// names it) and a refusal the parent must raise. Shared memory rather than the pipe: a line per
// object would wake the parent once per object.
struct Shared {
    char last[4096];
    char refusal[4096];  // "object\treason"
};
Shared* g_shared = nullptr;

void copy_to(char (&buf)[4096], const std::string& text) {
    const std::size_t n = std::min(text.size(), sizeof buf - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
}

void say(char tag, const std::string& text) {
    if (tag == 'R') copy_to(g_shared->last, text);
    if (tag == 'X' && g_shared->refusal[0] == '\0') copy_to(g_shared->refusal, text);
}

// The memory type ternion's readers use most for this file type (floats as float, integers as
// int64), so libhdf5's conversions run here first; anything else in its native type.
Handle memory_type(hid_t ftype) {
    switch (H5Tget_class(ftype)) {
        case H5T_FLOAT:
            return Handle(H5Tcopy(H5T_NATIVE_FLOAT), H5Tclose);
        case H5T_INTEGER:
            return Handle(H5Tcopy(H5T_NATIVE_INT64), H5Tclose);
        default:
            return Handle(H5Tget_native_type(ftype, H5T_DIR_DEFAULT), H5Tclose);
    }
}

bool has_vlen(hid_t mtype) {
    return H5Tis_variable_str(mtype) > 0 || H5Tdetect_class(mtype, H5T_VLEN) > 0;
}

// Reads the selection `mspace`/`fspace` of a dataset (or the whole attribute when is_attr)
// into a scratch buffer of the native type, then frees any variable-length data.
void read_into_scratch(hid_t obj, bool is_attr, hid_t mtype, hid_t mspace, hid_t fspace,
                       std::size_t n) {
    const std::size_t sz = H5Tget_size(mtype);
    if (sz == 0 || n == 0) return;
    std::vector<unsigned char> buf(n * sz, 0);
    const herr_t st = is_attr ? H5Aread(obj, mtype, buf.data())
                              : H5Dread(obj, mtype, mspace, fspace, H5P_DEFAULT, buf.data());
    if (st >= 0 && has_vlen(mtype)) H5Dvlen_reclaim(mtype, mspace, H5P_DEFAULT, buf.data());
    // A damaged length in variable-length data makes libhdf5 allocate what it claims (a 33 KB
    // model asked for gigabytes): here the memory limit makes the read fail, and ternion's own
    // process, which has no such limit, must not repeat it.
    if (st < 0 && has_vlen(mtype))
        say('X', std::string(g_shared->last) +
                     "\tvariable-length data that libhdf5 cannot read within " +
                     "the memory limit (damaged file?)");
}

// Blocks of about 16 MiB: whole trailing axes while they fit, part of the next one.
std::vector<hsize_t> block_of(const std::vector<hsize_t>& dims, std::size_t elem) {
    std::vector<hsize_t> blk(dims.size(), 1);
    double have = static_cast<double>(elem);
    const double target = 16.0 * (1 << 20);
    for (std::size_t k = dims.size(); k-- > 0;) {
        if (have * static_cast<double>(dims[k]) <= target) {
            blk[k] = dims[k];
            have *= static_cast<double>(dims[k]);
            continue;
        }
        blk[k] = std::max<hsize_t>(1, static_cast<hsize_t>(target / have));
        break;
    }
    return blk;
}

// Advances the block origin `at` over the grid (odometer); false when done.
bool next_block(std::vector<hsize_t>& at, const std::vector<hsize_t>& dims,
                const std::vector<hsize_t>& blk) {
    for (std::size_t k = dims.size(); k-- > 0;) {
        at[k] += blk[k];
        if (at[k] < dims[k]) return true;
        at[k] = 0;
    }
    return false;
}

void read_dataset(hid_t d) {
    Handle ftype(H5Dget_type(d), H5Tclose);
    Handle mtype = memory_type(ftype.id());
    Handle fspace(H5Dget_space(d), H5Sclose);
    if (!mtype || !fspace || H5Sget_simple_extent_npoints(fspace.id()) <= 0) return;
    const int rank = H5Sget_simple_extent_ndims(fspace.id());
    if (rank <= 0) {
        Handle ms(H5Screate(H5S_SCALAR), H5Sclose);
        return read_into_scratch(d, false, mtype.id(), ms.id(), H5S_ALL, 1);
    }
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), at(dims.size(), 0);
    H5Sget_simple_extent_dims(fspace.id(), dims.data(), nullptr);
    const std::vector<hsize_t> blk = block_of(dims, H5Tget_size(mtype.id()));
    do {
        std::vector<hsize_t> cnt(dims.size());
        std::size_t n = 1;
        for (std::size_t k = 0; k < dims.size(); ++k) {
            cnt[k] = std::min(blk[k], dims[k] - at[k]);
            n *= cnt[k];
        }
        H5Sselect_hyperslab(fspace.id(), H5S_SELECT_SET, at.data(), nullptr, cnt.data(), nullptr);
        Handle ms(H5Screate_simple(rank, cnt.data(), nullptr), H5Sclose);
        read_into_scratch(d, false, mtype.id(), ms.id(), fspace.id(), n);
    } while (next_block(at, dims, blk));
}

struct Walk {
    const Reader* reader;
    std::string object;  // the object whose attributes are being read
};

herr_t read_attribute(hid_t loc, const char* name, const H5A_info_t*, void* op) {
    auto* w = static_cast<Walk*>(op);
    say('R', w->object + "@" + name);
    Handle a(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose);
    if (!a) return 0;
    Handle ftype(H5Aget_type(a.id()), H5Tclose);
    Handle mtype = memory_type(ftype.id());
    Handle space(H5Aget_space(a.id()), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.id());
    if (mtype && n > 0)
        read_into_scratch(a.id(), true, mtype.id(), space.id(), H5S_ALL,
                          static_cast<std::size_t>(n));
    return 0;
}

struct Seen {
    std::set<haddr_t> addr;  // hard links make cycles
    int depth = 0;
};
void walk_members(Walk& w, hid_t group, const std::string& path, Seen& seen);

// One object, opened relative to its group: its attributes, then a dataset's data or a group's
// members.
void walk_object(Walk& w, hid_t group, const char* name, const std::string& obj, Seen& seen) {
    say('R', obj);
    H5O_info_t oi;
    if (H5Oget_info_by_name2(group, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return;
    if (!seen.addr.insert(oi.addr).second) return;
    Handle o(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
    if (!o) return;
    w.object = obj;
    H5Aiterate2(o.id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, read_attribute, &w);
    say('R', obj);
    if (oi.type == H5O_TYPE_GROUP) return walk_members(w, o.id(), obj, seen);
    if (oi.type != H5O_TYPE_DATASET) return;
    try {
        w.reader->check_storage(obj);  // what the parent refuses, the child must not read
    } catch (const Error&) {
        return;
    }
    read_dataset(o.id());
}

struct Members {
    Walk* w;
    const std::string* path;
    Seen* seen;
};

herr_t visit_member(hid_t group, const char* name, const H5L_info_t* info, void* op) {
    auto* m = static_cast<Members*>(op);
    const std::string obj = (*m->path == "/" ? "/" : *m->path + "/") + name;
    if (info->type == H5L_TYPE_EXTERNAL || info->type >= H5L_TYPE_UD_MIN) {
        // A link to another file would make libhdf5 open a file that was never vetted.
        say('X', obj + "\tlinks to another file (not supported)");
        return 0;
    }
    walk_object(*m->w, group, name, obj, *m->seen);
    return 0;  // one damaged member stops neither the walk nor its siblings
}

// Members by link name, as ternion's readers reach objects (H5Ovisit would stop at the first
// damaged object header and leave the rest unread).
void walk_members(Walk& w, hid_t group, const std::string& path, Seen& seen) {
    if (++seen.depth > 64) return;
    Members m{&w, &path, &seen};
    // A group that cannot be listed hides members that ternion's readers would still open by
    // name, unvetted (a damaged one asked libhdf5 for gigabytes): the file is refused.
    if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, visit_member, &m) < 0)
        say('X', path + "\tlibhdf5 cannot list this group's members (damaged file?)");
    --seen.depth;
}

void limit(int resource, rlim_t value) {
    const rlimit r{value, value};
    setrlimit(resource, &r);
}

[[maybe_unused]] std::uint64_t address_space_now() {  // unused under sanitizers
    std::ifstream f("/proc/self/statm");
    std::uint64_t pages = 0;
    f >> pages;
    return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
}

[[noreturn]] void child(const std::string& path, const VetLimits& lim) {
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
        std::signal(s, SIG_DFL);  // die by the signal, untouched by the parent's handlers
    limit(RLIMIT_CORE, 0);        // a crash must not leave a core file behind
    // Whatever the child might print (a sanitizer's report) would break the one-line rule;
    // the parent reports how it ended.
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, STDERR_FILENO);
    const auto cpu = static_cast<rlim_t>(lim.cpu_seconds);
    const rlimit c{cpu, cpu + 1};
    setrlimit(RLIMIT_CPU, &c);
#ifndef TERNION_VET_NO_AS_LIMIT
    limit(RLIMIT_AS, static_cast<rlim_t>(address_space_now() + lim.memory_bytes));
#endif
    g_vetting = false;
    try {
        const Reader r(path);
        Walk w{&r, "/"};
        Seen seen;
        walk_object(w, r.file_id(), "/", "/", seen);
    } catch (const Error&) {
        _exit(0);  // not openable: the parent's own open says why
    } catch (const std::bad_alloc&) {
        _exit(4);
    } catch (...) {
        _exit(5);
    }
    _exit(0);
}

// ---------------------------------------------------------------- parent

struct Verdict {
    std::string last;     // the object the child was reading
    std::string refusal;  // "object\treason"
};

// Resident bytes of process `pid` (0 when gone).
std::uint64_t resident_of(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/statm");
    std::uint64_t size = 0, resident = 0;
    f >> size >> resident;
    return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
}

enum class End { closed, wall_clock, memory };

// Waits for the child to end (its end of the pipe closes), watching the wall clock and, every
// 50 ms, its resident memory (the only memory limit under AddressSanitizer, which reserves
// terabytes of address space and so cannot run under RLIMIT_AS).
End wait_for(int fd, pid_t pid, const VetLimits& lim) {
    using clock = std::chrono::steady_clock;
    const auto end = clock::now() + std::chrono::duration<double>(lim.wall_seconds);
    const std::uint64_t base = resident_of(::getpid());
    char buf[64];
    auto next_look = clock::now();
    for (;;) {
        const auto now = clock::now();
        if (now >= end) return End::wall_clock;
        if (now >= next_look) {
            if (resident_of(pid) > base + lim.memory_bytes) return End::memory;
            next_look = now + std::chrono::milliseconds(50);
        }
        pollfd p{fd, POLLIN, 0};
        const int r = ::poll(&p, 1, 50);
        if (r == 0 || (r < 0 && errno == EINTR)) continue;
        const ssize_t got = r < 0 ? 0 : ::read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return End::closed;
    }
}

std::string signal_name(int sig) {
    switch (sig) {
        case SIGSEGV:
            return "SIGSEGV";
        case SIGBUS:
            return "SIGBUS";
        case SIGABRT:
            return "SIGABRT";
        case SIGFPE:
            return "SIGFPE";
        case SIGILL:
            return "SIGILL";
        default:
            return "signal " + std::to_string(sig);
    }
}

[[noreturn]] void refuse(const std::string& path, const std::string& object,
                         const std::string& what) {
    throw InputError(path, object, what + " (damaged or hostile file?)");
}

std::string mib(std::uint64_t bytes) {
    return std::to_string(bytes >> 20) + " MiB of memory";
}

void judge(const std::string& path, int status, End how, const Verdict& v, const VetLimits& lim) {
    const std::string obj = v.last;
    if (how == End::wall_clock)
        refuse(path, obj,
               "libhdf5 did not finish reading it within " +
                   std::to_string(static_cast<long>(lim.wall_seconds)) + " s");
    if (how == End::memory)
        refuse(path, obj, "reading it needs more than " + mib(lim.memory_bytes));
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        if (sig == SIGXCPU || sig == SIGKILL)
            refuse(path, obj,
                   "libhdf5 did not finish reading it within " +
                       std::to_string(static_cast<long>(lim.cpu_seconds)) + " s of CPU time");
        refuse(path, obj, "libhdf5 crashed (" + signal_name(sig) + ") reading it");
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    if (code == 4) refuse(path, obj, "reading it needs more than " + mib(lim.memory_bytes));
    if (code != 0)
        refuse(path, obj, "libhdf5 failed reading it (exit " + std::to_string(code) + ")");
    if (!v.refusal.empty()) {
        const auto tab = v.refusal.find('\t');
        throw InputError(path, v.refusal.substr(0, tab), v.refusal.substr(tab + 1));
    }
}

using FileId = std::tuple<dev_t, ino_t, off_t, std::int64_t>;

std::set<FileId>& vetted() {
    static std::set<FileId> s;
    return s;
}

}  // namespace

VetLimits vet_limits(std::uint64_t file_bytes) {
    VetLimits l;
    l.cpu_seconds = 5.0 + static_cast<double>(file_bytes) / (4.0 * (1 << 20));
    l.wall_seconds = 4 * l.cpu_seconds;
    l.memory_bytes = (std::uint64_t{1} << 30) + 2 * file_bytes;
    return l;
}

void set_vetting(bool on) {
    g_vetting = on;
}
bool vetting() {
    return g_vetting;
}

void vet_file(const std::string& path, bool remember) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // the open reports it
    const FileId id{st.st_dev, st.st_ino, st.st_size,
                    std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
    if (remember && vetted().count(id)) return;
    check_global_heaps(path);
    const VetLimits lim = vet_limits(static_cast<std::uint64_t>(st.st_size));
    void* mem =
        ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) throw InputError(path, "", "cannot map memory to vet it");
    auto* shared = new (mem) Shared{};
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        ::munmap(mem, sizeof(Shared));
        throw InputError(path, "", "cannot create a pipe to vet it");
    }
    std::fflush(nullptr);  // nothing buffered is written twice
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[0]);
        g_shared = shared;
        child(path, lim);  // fds[1] stays open until the child ends
    }
    ::close(fds[1]);
    const End how = pid < 0 ? End::closed : wait_for(fds[0], pid, lim);
    ::close(fds[0]);
    const Verdict v{
        std::string(shared->last, ::strnlen(shared->last, sizeof shared->last)),
        std::string(shared->refusal, ::strnlen(shared->refusal, sizeof shared->refusal))};
    ::munmap(mem, sizeof(Shared));
    if (pid < 0) throw InputError(path, "", "cannot fork to vet it");
    if (how != End::closed) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    judge(path, status, how, v, lim);
    if (remember) vetted().insert(id);
}

}  // namespace ternion::h5
