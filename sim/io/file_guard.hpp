// Guards around the files a run writes and the memory it may take, shared by the CLI, the
// run pipeline and the bindings: an output never overwrites an input, never lands in a missing
// directory, and a run refuses up front what it could not hold.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ternion {

// An input file and the option (or role) that named it, for output checks.
struct NamedPath {
    std::string option;  // "input", "model", ...
    std::string path;
};

// Refuses, before any work, an output path given with --option that is the same file as one of
// `inputs` (by device and inode, or by canonical path), names a directory, lies in a missing or
// unwritable directory, or whose hidden temporary name would be too long. Throws OptionError.
void check_output(const std::string& option, const std::string& out,
                  const std::vector<NamedPath>& inputs);

// The default memory limit of a run: 80 % of the machine's physical memory.
std::uint64_t default_memory_limit();

// Refuses (OptionError on --max-memory) an estimate above `limit` bytes (0: the default
// limit), naming what needs it ("the run", "loading the model").
void check_memory_limit(double estimate, std::uint64_t limit, const std::string& what);

// Resident memory of the process now, from /proc/self/statm (0 where unavailable).
std::uint64_t resident_bytes();

// Bytes the datasets of an HDF5 file declare (their products of dimensions times the type's
// size, each at least 4 bytes an element: ternion holds values as float or wider).
double declared_bytes(const std::string& h5_path);

}  // namespace ternion
