// A small command-line flag parser: --name=value or --name value, --flag for booleans, --help.
//
//   Flags flags("shardflow train", "Trains a model on Fashion-MNIST.");
//   int64_t epochs = 2;
//   flags.Int("epochs", &epochs, "passes over the training set");
//   SF_RETURN_IF_ERROR(flags.Parse(argc, argv));   // error names an unknown flag
//   if (flags.help_requested()) { std::cout << flags.Usage(); ... }
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_FLAGS_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shardflow {

class Flags {
 public:
  Flags(std::string command, std::string summary)
      : command_(std::move(command)), summary_(std::move(summary)) {}
  // Each registers a flag whose current value is its default; `value` is borrowed.
  void String(const std::string& name, std::string* value, const std::string& help);
  void Int(const std::string& name, int64_t* value, const std::string& help);
  void Double(const std::string& name, double* value, const std::string& help);
  void Bool(const std::string& name, bool* value, const std::string& help);
  // Parses argv[first..]. Errors: an unknown flag (with the closest known names), a missing or
  // malformed value, a positional argument.
  absl::Status Parse(int argc, char** argv, int first = 1);
  bool help_requested() const { return help_; }
  // A subcommand's whole life: parses argv[first..], prints usage for --help, else runs `body`.
  // Returns the exit code: 0 ok or help, 1 when `body` fails (its message after
  // `error_prefix` on stderr), 2 for bad flags.
  int RunCommand(int argc, char** argv, int first, const std::function<absl::Status()>& body,
                 const std::string& error_prefix);
  bool was_set(const std::string& name) const;
  std::string Usage() const;

 private:
  struct Flag {
    std::string name, help, default_text, kind;
    std::function<bool(const std::string&)> set;
    bool is_bool = false;
    bool set_by_user = false;
  };
  std::string command_, summary_;
  std::vector<Flag> flags_;
  bool help_ = false;
};

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_FLAGS_H_
