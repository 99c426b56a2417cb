#include "sim/io/h5_params.hpp"

namespace ternion {

bool H5Params::has(const std::string& param) const {
    return file_.exists(path(param));
}
bool H5Params::is_string(const std::string& param) const {
    return file_.info(path(param)).kind == h5::Kind::string;
}
Shape H5Params::dims(const std::string& param) const {
    return file_.info(path(param)).dims;
}
std::vector<double> H5Params::doubles(const std::string& param, Shape* dims) const {
    h5::DatasetInfo inf;
    auto v = file_.read_doubles(path(param), &inf);  // names file and path on error
    if (dims) *dims = inf.dims;
    return v;
}
std::string H5Params::string(const std::string& param) const {
    return file_.read_string(path(param));
}

}  // namespace ternion
