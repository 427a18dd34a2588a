// The command line of the shardflow tool, parsed by CLI11 (Debian's libcli11-dev): subcommands,
// each with its own flags and --help, and errors that name the flag and the way out.
//
//   CommandLine cli("shardflow", "dataflow graphs split across devices and hosts");
//   auto c = std::make_shared<TrainConfig>();
//   Flags* flags = cli.AddCommand("train", "train a model", "Trains a model on Fashion-MNIST.",
//                                 [c] { return Train(*c); }, "shardflow train: ");
//   flags->Int("epochs", &c->epochs, "passes over the training set");
//   return cli.Run(argc, argv);  // the process's exit code
//
// What users type: --name value or --name=value (--name= is an empty value); a Bool flag is
// --name (true) or --name=false (also =true, =1, =0); -h or --help on every command. A flag given
// twice keeps the last value. Every command also takes --log-level info|warning|error, the least
// severe glog message printed (docs/distributed.md, "Logs").
//
// Only flags.cc includes CLI11 (a large header-only library). Its exceptions stay inside Run().
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_FLAGS_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_FLAGS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace shardflow {

// The flags of one command. Each call registers a flag whose current value is its default and
// shows in --help; `value` is borrowed and must outlive CommandLine::Run().
class Flags {
 public:
  void String(const std::string& name, std::string* value, const std::string& help);
  void Int(const std::string& name, int64_t* value, const std::string& help);
  void Double(const std::string& name, double* value, const std::string& help);
  // With `env`, the flag's default is that environment variable when it is set (1, true, yes,
  // on; 0, false, no, off); another value fails the command, unless the flag is given.
  void Bool(const std::string& name, bool* value, const std::string& help,
            const std::string& env = "");

 private:
  friend class CommandLine;
  explicit Flags(CLI::App* command) : command_(command) {}
  CLI::App* command_;  // owned by the CommandLine
  // Flags whose environment variable holds no boolean, and the message that says so.
  std::vector<std::pair<const CLI::Option*, std::string>> env_errors_;
};

class CommandLine {
 public:
  // `name` is the program's name in usage and errors; `summary` opens `name --help`.
  CommandLine(const std::string& name, const std::string& summary);
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // Adds a command: `one_line` is its line in `name --help`, `description` opens its own --help.
  // `run` runs once its flags are parsed; its error is printed after `error_prefix` on stderr.
  // The returned Flags belong to this CommandLine.
  Flags* AddCommand(const std::string& command, const std::string& one_line,
                    const std::string& description, std::function<absl::Status()> run,
                    const std::string& error_prefix);

  // Parses argv, applies --log-level, and runs the command argv names. Returns the exit code: 0
  // when the command succeeded or help was asked for, 1 when the command failed, 2 for a bad
  // command line (an unknown command or flag, a missing or malformed value; the message says
  // which, with the closest known flags). Call once.
  int Run(int argc, char** argv);

 private:
  struct Command;
  std::unique_ptr<CLI::App> app_;
  std::vector<std::unique_ptr<Command>> commands_;
  std::string log_level_ = "info";
};

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_FLAGS_H_
