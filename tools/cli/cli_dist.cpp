#include "tools/cli/cli_dist.hpp"

#include <boost/program_options/errors.hpp>
#include <new>
#include <stdexcept>
#include <string>

#include "sim/core/error.hpp"

namespace ternion::cli {

dist::Failure describe_error(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const Error& x) {
        return {1, std::string("ternion: error: ") + x.what()};
    } catch (const boost::program_options::error& x) {
        return {2, std::string("ternion: error: ") + x.what()};
    } catch (const std::bad_alloc&) {
        return {1, "ternion: error: out of memory"};
    } catch (const std::exception& x) {
        return {3, std::string("ternion: internal error: ") + x.what()};
    } catch (...) {
        return {3, "ternion: internal error: unknown exception"};
    }
}

}  // namespace ternion::cli
