#include "models/metadata.hpp"

#include <algorithm>

namespace ternion {

namespace {

// An attribute `key` of `group`/metadata that is there but was not read as `kind` (another
// type, or more than one value): refused, as a dataset of the wrong kind is, so that a value
// stored as an integer is never taken as "not given".
void refuse_present_attr(const h5::Reader& r, const std::string& group, const std::string& key,
                         const char* kind) {
    const auto names = r.attr_names(group + "/metadata");
    if (std::find(names.begin(), names.end(), key) != names.end())
        r.fail(group + "/metadata/" + key,
               std::string("must be ") + kind + " (an attribute of " + group +
                   "/metadata holding another type or more than one value)");
}

}  // namespace

std::optional<double> metadata_number(const h5::Reader& r, const std::string& group,
                                      const std::string& key) {
    const std::string ds = group + "/metadata/" + key;
    if (r.is_dataset(ds)) {
        const auto kind = r.info(ds).kind;
        if (kind != h5::Kind::floating && kind != h5::Kind::integer) r.fail(ds, "must be a number");
        return r.read_scalar(ds);
    }
    if (r.is_group(group + "/metadata")) {
        if (auto a = r.attr_double(group + "/metadata", key)) return a;
        refuse_present_attr(r, group, key, "a number");
    }
    return std::nullopt;
}

std::optional<std::string> metadata_string(const h5::Reader& r, const std::string& group,
                                           const std::string& key) {
    const std::string ds = group + "/metadata/" + key;
    if (r.is_dataset(ds)) {
        if (r.info(ds).kind != h5::Kind::string) r.fail(ds, "must be a string");
        return r.read_string(ds);
    }
    if (r.is_group(group + "/metadata")) {
        if (auto a = r.attr_string(group + "/metadata", key)) return a;
        refuse_present_attr(r, group, key, "a string");
    }
    return std::nullopt;
}

}  // namespace ternion
