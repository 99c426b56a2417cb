// Shared by the libFuzzer harnesses: the bytes under test become a file (the readers take
// paths), and only ternion::Error counts as a clean refusal. Anything else that escapes
// (InternalError, std::bad_alloc, a crash, a sanitizer report) is a finding.
#pragma once
#include <hdf5.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sim/core/error.hpp"
#include "sim/io/h5vet.hpp"

namespace ternion::fuzz {

// Writes data to a per-process file in /dev/shm (or /tmp) and returns its path.
inline std::string as_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
    static const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    const std::string p = dir + "/ternion-fuzz-" + std::to_string(getpid()) + suffix;
    // A new inode each time: libhdf5 shares an open file's cached metadata with any later open
    // of the same file, so a handle left open by one input must not colour the next one.
    ::unlink(p.c_str());
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (!f) __builtin_trap();
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
    return p;
}

// Every HDF5 identifier a reader opened must be closed again, on success and on every error
// path: a leaked one keeps its file (and libhdf5's caches for it) alive, which a long-lived
// process (the Python module) would pay for file after file.
inline void expect_no_open_hdf5_objects() {
    const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (open != 0) {
        std::fprintf(stderr, "finding: %zd HDF5 identifiers left open\n", open);
        std::abort();
    }
}

// Runs fn; a ternion::Error is the expected answer to a bad file.
template <class F>
void expect_clean(F&& fn) {
    try {
        fn();
    } catch (const ternion::Error&) {
    }
}

// As the CLI does: the file is first read in a child process (sim/io/h5vet.hpp), and only a file
// the child read without crashing, hanging or running out of memory reaches fn. A finding is
// then a file the containment let through. TERNION_FUZZ_RAW=1 skips the child, to fuzz the
// readers alone (libhdf5's own crashes are then findings too).
template <class F>
void expect_clean_vetted(const std::string& path, F&& fn) {
    static const bool raw = std::getenv("TERNION_FUZZ_RAW") != nullptr;
    expect_clean([&] {
        if (!raw) ternion::h5::vet_file(path, false);
        fn();
    });
    expect_no_open_hdf5_objects();
}

}  // namespace ternion::fuzz
