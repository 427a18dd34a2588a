#include "tools/shardflow/flags.h"

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace shardflow {

void Flags::String(const std::string& name, std::string* value, const std::string& help) {
  flags_.push_back({name, help, *value, "string", [value](const std::string& v) {
                      *value = v;
                      return true;
                    }});
}

void Flags::Int(const std::string& name, int64_t* value, const std::string& help) {
  flags_.push_back({name, help, absl::StrCat(*value), "int",
                    [value](const std::string& v) { return absl::SimpleAtoi(v, value); }});
}

void Flags::Double(const std::string& name, double* value, const std::string& help) {
  flags_.push_back({name, help, absl::StrCat(*value), "number",
                    [value](const std::string& v) { return absl::SimpleAtod(v, value); }});
}

void Flags::Bool(const std::string& name, bool* value, const std::string& help) {
  Flag f{name, help, *value ? "true" : "false", "bool", [value](const std::string& v) {
           if (v == "true" || v == "1" || v.empty()) {
             *value = true;
           } else if (v == "false" || v == "0") {
             *value = false;
           } else {
             return false;
           }
           return true;
         }};
  f.is_bool = true;
  flags_.push_back(f);
}

bool Flags::was_set(const std::string& name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return f.set_by_user;
  }
  return false;
}

absl::Status Flags::Parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(command_, ": unexpected argument '", arg,
                       "'; flags look like --name=value (see --help)"));
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Flag* flag = nullptr;
    for (Flag& f : flags_) {
      if (f.name == name) flag = &f;
    }
    if (flag == nullptr) {
      std::vector<std::string> close;
      for (const Flag& f : flags_) {
        if (f.name.find(name) != std::string::npos || name.find(f.name) != std::string::npos ||
            f.name.substr(0, 3) == name.substr(0, 3)) {
          close.push_back("--" + f.name);
        }
      }
      return absl::InvalidArgumentError(absl::StrCat(
          command_, ": unknown flag --", name,
          close.empty() ? "" : absl::StrCat("; did you mean ", absl::StrJoin(close, ", "), "?"),
          " (see --help)"));
    }
    if (!has_value && !flag->is_bool) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat(command_, ": --", name, " needs a value"));
      }
      value = argv[++i];
    }
    if (!flag->set(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(command_, ": --", name, "=", value, " is not a valid ", flag->kind));
    }
    flag->set_by_user = true;
  }
  return absl::OkStatus();
}

int Flags::RunCommand(int argc, char** argv, int first, const std::function<absl::Status()>& body,
                      const std::string& error_prefix) {
  absl::Status st = Parse(argc, argv, first);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
    return 2;
  }
  if (help_requested()) {
    std::printf("%s", Usage().c_str());
    return 0;
  }
  st = body();
  if (!st.ok()) {
    std::fprintf(stderr, "%s%s\n", error_prefix.c_str(), std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}

std::string Flags::Usage() const {
  std::string out = absl::StrCat("usage: ", command_, " [flags]\n\n", summary_, "\n\nflags:\n");
  for (const Flag& f : flags_) {
    absl::StrAppendFormat(&out, "  --%-18s %s (default: %s)\n", f.name, f.help,
                          f.default_text.empty() ? "\"\"" : f.default_text);
  }
  absl::StrAppend(&out, "  --help               this text\n");
  return out;
}

}  // namespace shardflow
