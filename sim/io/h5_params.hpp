// A node's parameters read from its group in a model file (NIR layout: one dataset per
// parameter), as a ParamSource for NodeSpec (sim/core/node_spec.hpp).
#pragma once
#include <memory>
#include <string>

#include "sim/core/node_spec.hpp"
#include "sim/io/h5io.hpp"

namespace ternion {

class H5Params final : public ParamSource {
  public:
    H5Params(const h5::Reader& file, std::string group) : file_(file), group_(std::move(group)) {}
    const std::string& origin() const override { return file_.path(); }
    bool has(const std::string& param) const override;
    bool is_string(const std::string& param) const override;
    Shape dims(const std::string& param) const override;
    std::vector<double> doubles(const std::string& param, Shape* dims) const override;
    std::string string(const std::string& param) const override;
    std::vector<std::string> names() const override { return file_.children(group_); }
    const std::string& group() const { return group_; }  // "/node/nodes/<name>"

  private:
    std::string path(const std::string& param) const { return group_ + "/" + param; }
    const h5::Reader& file_;
    std::string group_;
};

// The spec of node `name` of type `type` whose parameters are the group `group` of `file`.
inline NodeSpec h5_node_spec(const h5::Reader& file, std::string group, std::string name,
                             std::string type, const LoadOptions& opts) {
    return NodeSpec(std::make_shared<H5Params>(file, std::move(group)), std::move(name),
                    std::move(type), opts);
}

}  // namespace ternion
