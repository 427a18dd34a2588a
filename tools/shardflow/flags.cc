#include "tools/shardflow/flags.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace shardflow {

// One command: its CLI11 subcommand, its flags and what it runs.
struct CommandLine::Command {
  CLI::App* app = nullptr;  // owned by CommandLine::app_
  std::unique_ptr<Flags> flags;
  std::function<absl::Status()> run;
  std::string error_prefix;
  CLI::Option* log_level = nullptr;
};

namespace {

// glog's severities by --log-level name (FLAGS_minloglevel: messages below it are dropped).
const std::map<std::string, int>& LogLevels() {
  static const auto* levels = new std::map<std::string, int>{{"info", google::GLOG_INFO},
                                                             {"warning", google::GLOG_WARNING},
                                                             {"error", google::GLOG_ERROR}};
  return *levels;
}

// CLI11's help, laid out as shardflow's: usage, the description, the flags, the commands (each
// with its one-line summary rather than its whole description).
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() {
    column_width(30);
    label("Usage", "usage");
    label("OPTIONS", "flags");
    label("SUBCOMMAND", "command");
  }
  void set_one_line(const std::string& command, const std::string& text) {
    one_line_[command] = text;
  }
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    return absl::StrCat(make_usage(app, name), "\n", make_description(app), make_groups(app, mode),
                        make_subcommands(app, mode), "\n");
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    auto it = one_line_.find(sub->get_name());
    CLI::detail::format_help(out, sub->get_name(),
                             it == one_line_.end() ? sub->get_description() : it->second,
                             get_column_width());
    return out.str();
  }

 private:
  std::map<std::string, std::string> one_line_;
};

// Validators: CLI11 runs them on a flag's text before converting it, so that a bad value is
// named with its flag ("--epochs: 'abc' is not a whole number") and an out-of-range integer is
// refused instead of clamped.
CLI::Validator WholeNumber() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t v;
        return absl::SimpleAtoi(text, &v) ? "" : absl::StrCat("'", text, "' is not a whole number");
      },
      "", "whole number");
}

CLI::Validator Number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v;
        return absl::SimpleAtod(text, &v) ? "" : absl::StrCat("'", text, "' is not a number");
      },
      "", "number");
}

CLI::Validator TrueOrFalse() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text == "true" || text == "false" || text == "1" || text == "0") return "";
        return absl::StrCat("takes true or false (or nothing, for true), not '", text, "'");
      },
      "", "true or false");
}

// "unknown flag --epoch; did you mean --epochs?" for the first unparsed argument `arg` of
// `command`, or "unexpected argument 'x'" for one that is not a flag.
std::string UnparsedArgumentMessage(const CLI::App& command, const std::string& arg) {
  if (!absl::StartsWith(arg, "--")) {
    return absl::StrCat("unexpected argument '", arg, "'; flags look like --name=value");
  }
  std::string name =
      arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2);
  std::vector<std::string> close;
  for (const CLI::Option* opt : command.get_options()) {
    for (const std::string& known : opt->get_lnames()) {
      if (known == "help") continue;
      if (!name.empty() && (absl::StrContains(known, name) || absl::StrContains(name, known) ||
                            known.substr(0, 3) == name.substr(0, 3))) {
        close.push_back("--" + known);
      }
    }
  }
  return absl::StrCat(
      "unknown flag --", name,
      close.empty() ? "" : absl::StrCat("; did you mean ", absl::StrJoin(close, ", "), "?"));
}

}  // namespace

void Flags::String(const std::string& name, std::string* value, const std::string& help) {
  command_->add_option("--" + name, *value, help);
}

void Flags::Int(const std::string& name, int64_t* value, const std::string& help) {
  command_->add_option("--" + name, *value, help)->check(WholeNumber());
}

void Flags::Double(const std::string& name, double* value, const std::string& help) {
  command_->add_option("--" + name, *value, help)->check(Number());
}

void Flags::Bool(const std::string& name, bool* value, const std::string& help,
                 const std::string& env) {
  std::string error;
  if (!env.empty()) {
    const char* set = std::getenv(env.c_str());
    std::string text = absl::AsciiStrToLower(absl::StripAsciiWhitespace(set ? set : ""));
    if (text == "1" || text == "true" || text == "yes" || text == "on") {
      *value = true;
    } else if (text == "0" || text == "false" || text == "no" || text == "off") {
      *value = false;
    } else if (!text.empty()) {
      error = absl::StrCat(env, " is '", set, "'; set it to 1 (--", name, ") or 0, or unset it");
    }
  }
  // CLI11 shows no default for a flag: say how to turn off one that is on.
  std::string text =
      *value ? absl::StrCat(help, " (on by default; --", name, "=false turns it off)") : help;
  if (!env.empty()) absl::StrAppend(&text, " (default: $", env, ")");
  CLI::Option* opt = command_->add_flag("--" + name, *value, text)->check(TrueOrFalse());
  if (!error.empty()) env_errors_.emplace_back(opt, error);
}

CommandLine::CommandLine(const std::string& name, const std::string& summary)
    : app_(std::make_unique<CLI::App>(summary, name)) {
  app_->formatter(std::make_shared<HelpFormatter>());
  app_->require_subcommand(0, 1);
  app_->allow_extras();  // reported by Run(), with the closest known flags
  app_->option_defaults()
      ->always_capture_default()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->group("flags");
  app_->set_help_flag("-h,--help", "this text");
}

CommandLine::~CommandLine() = default;

Flags* CommandLine::AddCommand(const std::string& command, const std::string& one_line,
                               const std::string& description, std::function<absl::Status()> run,
                               const std::string& error_prefix) {
  auto c = std::make_unique<Command>();
  c->app = app_->add_subcommand(command, description);
  c->app->group("commands");
  c->app->allow_extras();
  c->app->set_help_flag("-h,--help", "this text");
  c->flags.reset(new Flags(c->app));
  c->run = std::move(run);
  c->error_prefix = error_prefix;
  static_cast<HelpFormatter*>(app_->get_formatter().get())->set_one_line(command, one_line);
  commands_.push_back(std::move(c));
  return commands_.back()->flags.get();
}

int CommandLine::Run(int argc, char** argv) {
  const std::string program = app_->get_name();
  // Last in every command's --help, and in the list of commands.
  for (const auto& c : commands_) {
    c->log_level =
        c->app
            ->add_option("--log-level", log_level_,
                         "least severe log message printed on stderr: info, warning or error "
                         "(without it: $GLOG_minloglevel, or info)")
            ->check(CLI::IsMember({"info", "warning", "error"}));
  }
  CLI::App* help = app_->add_subcommand("help", "");
  help->set_help_flag();  // `help --help` is help too
  help->group("commands");
  static_cast<HelpFormatter*>(app_->get_formatter().get())->set_one_line("help", "this text");
  // CLI::App::help() describes the command being parsed; this is the program's own help.
  const auto program_help = [this] {
    return app_->get_formatter()->make_help(app_.get(), app_->get_name(),
                                            CLI::AppFormatMode::Normal);
  };

  // CLI11 takes the argument after `--name=` as its value; shardflow has always read `--name=` as
  // an empty value (--token="$TOKEN" with TOKEN unset), so it is passed on as `--name ""`.
  std::vector<std::string> args;  // reversed, as CLI::App::parse wants them
  for (int i = argc - 1; i >= 1; --i) {
    std::string arg = argv[i];
    bool empty_value = false;
    if (absl::StartsWith(arg, "--") && absl::EndsWith(arg, "=")) {
      for (const auto& c : commands_) {
        CLI::Option* opt = c->app->get_option_no_throw(arg.substr(0, arg.size() - 1));
        empty_value |= opt != nullptr && opt->get_type_size() != 0;
      }
    }
    if (empty_value) {
      args.push_back("");
      args.push_back(arg.substr(0, arg.size() - 1));
    } else {
      args.push_back(arg);
    }
  }

  Command* chosen = nullptr;
  try {
    app_->parse(args);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app_->help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string where = program;
    for (const auto& c : commands_) {
      if (c->app->parsed()) where = absl::StrCat(program, " ", c->app->get_name());
    }
    std::fprintf(stderr, "%s: %s (see %s --help)\n", where.c_str(), e.what(), where.c_str());
    return 2;
  }
  for (const auto& c : commands_) {
    if (c->app->parsed()) chosen = c.get();
  }
  if (help->parsed()) {
    std::printf("%s", program_help().c_str());
    return 0;
  }
  std::vector<std::string> unparsed = app_->remaining();
  if (chosen == nullptr) {
    if (unparsed.empty()) {
      std::fprintf(stderr, "%s", program_help().c_str());
    } else if (absl::StartsWith(unparsed[0], "-")) {
      std::fprintf(stderr, "%s: unknown flag %s; flags follow the command (see %s --help)\n",
                   program.c_str(), unparsed[0].c_str(), program.c_str());
    } else {
      std::fprintf(stderr, "%s: unknown command '%s'\n\n%s", program.c_str(), unparsed[0].c_str(),
                   program_help().c_str());
    }
    return 2;
  }
  const std::string where = absl::StrCat(program, " ", chosen->app->get_name());
  for (const std::string& arg : chosen->app->remaining()) unparsed.push_back(arg);
  if (!unparsed.empty()) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", where.c_str(),
                 UnparsedArgumentMessage(*chosen->app, unparsed[0]).c_str(), where.c_str());
    return 2;
  }
  for (const auto& [opt, message] : chosen->flags->env_errors_) {
    if (opt->count() > 0) continue;  // the command line says, the environment does not count
    std::fprintf(stderr, "%s: %s (see %s --help)\n", where.c_str(), message.c_str(), where.c_str());
    return 2;
  }
  if (chosen->log_level->count() > 0) FLAGS_minloglevel = LogLevels().at(log_level_);
  absl::Status st = chosen->run();
  if (!st.ok()) {
    std::fprintf(stderr, "%s%s\n", chosen->error_prefix.c_str(), std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace shardflow
