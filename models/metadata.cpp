#include "models/metadata.hpp"

namespace ternion {

std::optional<double> metadata_number(const h5::Reader& r, const std::string& group,
                                      const std::string& key) {
    const std::string ds = group + "/metadata/" + key;
    if (r.is_dataset(ds)) {
        const auto kind = r.info(ds).kind;
        if (kind != h5::Kind::floating && kind != h5::Kind::integer) r.fail(ds, "must be a number");
        return r.read_scalar(ds);
    }
    if (r.is_group(group + "/metadata"))
        if (auto a = r.attr_double(group + "/metadata", key)) return a;
    return std::nullopt;
}

std::optional<std::string> metadata_string(const h5::Reader& r, const std::string& group,
                                           const std::string& key) {
    const std::string ds = group + "/metadata/" + key;
    if (r.is_dataset(ds)) {
        if (r.info(ds).kind != h5::Kind::string) r.fail(ds, "must be a string");
        return r.read_string(ds);
    }
    if (r.is_group(group + "/metadata"))
        if (auto a = r.attr_string(group + "/metadata", key)) return a;
    return std::nullopt;
}

}  // namespace ternion
