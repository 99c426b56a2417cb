// The one reader of a model file's metadata (NIR: <group>/metadata/<key>), as a dataset or as an
// attribute of the metadata group: the loader's dt, discretisation, reset and writer, and the
// pipeline's timesteps and encoding hints read the same places with the same rules.
#pragma once
#include <optional>
#include <string>

#include "sim/io/h5io.hpp"

namespace ternion {

// A number: a numeric scalar dataset or a numeric attribute; nullopt when absent. A dataset of
// another kind (or an attribute of another type) is an error naming it: a typo'd value is
// never taken as "not given".
std::optional<double> metadata_number(const h5::Reader& r, const std::string& group,
                                      const std::string& key);
// A string: a string dataset or a string attribute; nullopt when absent; a dataset of another
// kind is an error naming it, and so is an attribute of another type.
std::optional<std::string> metadata_string(const h5::Reader& r, const std::string& group,
                                           const std::string& key);

}  // namespace ternion
