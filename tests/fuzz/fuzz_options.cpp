// libFuzzer harness: the option table that `ternion run` and Python's `ternion.run`/`ternion.load`
// share (models/run_options.hpp), read from arbitrary values. The bytes are lines
// `name=value` (a list's items separated by commas; a name may repeat); names are the Python
// keywords or the command-line names. Every value must be taken or refused with a
// ternion::Error naming the option: the readers are the one place both front ends check
// options before any C++ below them sees the values.
#include <map>
#include <string>
#include <vector>

#include "models/run_options.hpp"
#include "tests/fuzz/fuzz_file.hpp"

namespace {

using namespace ternion;

class FuzzValues final : public OptionValues {
  public:
    explicit FuzzValues(std::map<std::string, std::vector<std::string>> v) : v_(std::move(v)) {}
    bool given(const OptionSpec& o) const override {
        const auto* a = find(o);
        if (!a) return false;
        if (o.type == OptionType::flag) return a->front() == "1" || a->front() == "True";
        return !(o.type == OptionType::list && a->front().empty());
    }
    std::string text(const OptionSpec& o) const override { return find(o)->front(); }
    std::vector<std::string> list(const OptionSpec& o) const override {
        std::vector<std::string> r;
        for (const auto& s : *find(o)) {
            std::size_t b = 0;
            for (std::size_t e; (e = s.find(',', b)) != std::string::npos; b = e + 1)
                r.push_back(s.substr(b, e - b));
            r.push_back(s.substr(b));
        }
        return r;
    }

  private:
    const std::vector<std::string>* find(const OptionSpec& o) const {
        for (const char* n : {o.python, o.cli})
            if (auto it = v_.find(n); it != v_.end()) return &it->second;
        return nullptr;
    }
    std::map<std::string, std::vector<std::string>> v_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::map<std::string, std::vector<std::string>> v;
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::size_t b = 0;
    while (b <= text.size()) {
        std::size_t e = text.find('\n', b);
        if (e == std::string::npos) e = text.size();
        const std::string line = text.substr(b, e - b);
        if (const auto eq = line.find('='); eq != std::string::npos)
            v[line.substr(0, eq)].push_back(line.substr(eq + 1));
        b = e + 1;
    }
    const FuzzValues values(std::move(v));
    ternion::fuzz::expect_clean([&] { (void)read_load_options(values); });
    ternion::fuzz::expect_clean([&] {
        RunRequest q;
        read_run_options(values, q);
    });
    return 0;
}
