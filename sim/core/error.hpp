// Error types raised at ternion's boundaries (files, options, parameters).
// Every user-facing error names where it came from (file and field) so the CLI can print one line.
#pragma once
#include <stdexcept>
#include <string>

namespace ternion {

// Base of every error the CLI reports as "ternion: error: <what>" with a non-zero exit.
class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Bad user input: a file, a field in it (dataset, attribute, key) and what is wrong.
class InputError : public Error {
  public:
    InputError(const std::string& file, const std::string& field, const std::string& what)
        : Error(compose(file, field, what)), file_(file), field_(field), detail_(what) {}
    const std::string& file() const { return file_; }
    const std::string& field() const { return field_; }
    const std::string& detail() const { return detail_; }  // the message without file and field

  private:
    static std::string compose(const std::string& file, const std::string& field,
                               const std::string& what) {
        std::string s = file.empty() ? std::string() : file + ": ";
        if (!field.empty()) s += field + ": ";
        return s + what;
    }
    std::string file_, field_, detail_;
};

// A run stopped on request (RunConfig::cancel: Ctrl-C in Python) before all its samples ran.
class Interrupted : public Error {
  public:
    Interrupted() : Error("interrupted") {}
};

// A bad command-line option value: names the option.
class OptionError : public Error {
  public:
    OptionError(const std::string& option, const std::string& what)
        : Error("option --" + option + ": " + what) {}
};

// A broken invariant inside ternion: a bug, never the user's fault.
class InternalError : public std::logic_error {
  public:
    using std::logic_error::logic_error;
};

}  // namespace ternion
