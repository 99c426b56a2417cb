// Containment of libhdf5 on untrusted files. libhdf5 interprets a file's B-trees, object
// headers and heaps itself, and a damaged byte there can crash it or make it loop (libhdf5
// 1.10's H5D__contig_read, H5HG_read). Before ternion reads a file in its own process, a forked
// child opens it and reads every dataset and attribute under CPU, wall-clock and memory
// limits; a child that dies, hangs or runs out of memory becomes one InputError naming the
// file and the object it was reading.
#pragma once
#include <cstdint>
#include <string>

namespace ternion::h5 {

struct VetLimits {
    double cpu_seconds = 0;          // RLIMIT_CPU of the child
    double wall_seconds = 0;         // killed after this
    std::uint64_t memory_bytes = 0;  // address space beyond what the parent already uses
};

// The limits for a file of `file_bytes`: 5 s of CPU plus 1 s per 4 MiB, a wall-clock limit of
// four times that (the machine may be busy), 1 GiB of memory plus twice the file size.
VetLimits vet_limits(std::uint64_t file_bytes);

// Reads all of `path` in a child process; throws InputError(path, object, ...) when the child
// crashes, exceeds a limit or finds a link to another file. Files the child cannot open at all
// pass: the caller's own open reports them. With `remember`, each file (device, inode, size,
// mtime) is vetted once per process.
void vet_file(const std::string& path, bool remember = true);

// Walks every global heap collection of `path` (the blocks holding variable-length strings) as
// libhdf5 would, in this process and without libhdf5; throws InputError naming the collection's
// byte offset when its objects do not tile it (libhdf5 1.10 loops forever on a zero-sized
// object). Cheap: one scan of the file for the collections' signature. vet_file calls it.
void check_global_heaps(const std::string& path);

// Whether h5::Reader vets every file it opens (off by default; the CLI turns it on unless
// TERNION_TRUST_HDF5=1 is set).
void set_vetting(bool on);
bool vetting();

}  // namespace ternion::h5
