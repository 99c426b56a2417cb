// `ternion profiles`: list the hardware profiles, or show one with the source of every figure.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "hw/cost_model.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/error.hpp"
#include "tools/cli/commands.hpp"

namespace ternion::cli {

namespace po = boost::program_options;

int cmd_profiles(const Args& args) {
    po::options_description opts("options");
    opts.add_options()("help,h", "show this help")("json",
                                                   "print the profile file as JSON (with `show`)");
    po::options_description hidden;
    hidden.add_options()("words", po::value<std::vector<std::string>>(), "");
    po::options_description all;
    all.add(opts).add(hidden);
    po::positional_options_description pos;
    pos.add("words", -1);
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);

    if (vm.count("help")) {
        std::cout << "usage: ternion profiles [list]\n"
                     "       ternion profiles show NAME|FILE [--json]\n\n"
                     "Hardware profiles price counted operations (pJ per op, per byte moved).\n"
                     "A NAME is looked up in "
                  << hw::profile_dir()
                  << "\n(searched in order: " << join_dirs(hw::profile_search_dirs())
                  << "; $TERNION_PROFILE_DIR or $TERNION_DATA_DIR/profiles override);\n"
                     "anything containing '/' or ending in .json is read as a file.\n\n"
                  << opts;
        return 0;
    }
    std::vector<std::string> words;
    if (vm.count("words")) words = vm["words"].as<std::vector<std::string>>();

    if (words.empty() || (words.size() == 1 && words[0] == "list")) {
        auto list = hw::list_profiles();
        if (list.empty()) {
            std::printf("no profiles; searched %s\n", join_dirs(hw::profile_search_dirs()).c_str());
            return 0;
        }
        std::size_t w = 0;
        for (const auto& [n, d] : list) w = std::max(w, n.size());
        for (const auto& [n, d] : list)
            std::printf("%-*s  %s%s\n", static_cast<int>(w), n.c_str(), d.c_str(),
                        n == hw::kDefaultProfile ? " [default]" : "");
        return 0;
    }
    if (words[0] == "show") {
        if (words.size() != 2)
            throw OptionError("show", "expects exactly one profile name or file");
        hw::Profile p = hw::load_profile(words[1]);
        if (vm.count("json")) {
            std::ifstream in(p.path);  // as written, so the sources read in the file's order
            std::cout << in.rdbuf();
        } else {
            std::cout << hw::describe_profile(p);
        }
        return 0;
    }
    std::fprintf(stderr,
                 "ternion: error: unknown profiles action '%s' (use `list` or `show NAME`)\n",
                 words[0].c_str());
    return 2;
}

}  // namespace ternion::cli
