"""Command-line flags, as TF1's tf.app.flags / tf.flags (absl.flags' API, without absl).

Example::

    flags = sf.app.flags
    flags.DEFINE_integer("batch_size", 64, "Examples per step.")
    flags.DEFINE_boolean("fake_data", False, "Use fake data.")
    FLAGS = flags.FLAGS

    def main(argv):
        print(FLAGS.batch_size)            # 64, or --batch_size=128 from the command line

    if __name__ == "__main__":
        sf.app.run()

As in TF1: reading a flag before anything parsed the command line parses sys.argv then;
flags the program did not define are left alone (for the program, or other parsers);
``--name=value`` and ``--name value`` both work, booleans take ``--name``, ``--noname`` and
``--name=true/false``; everything after ``--`` is left alone. A bad value raises
IllegalFlagValueError (a ValueError) naming the flag; defining a name twice raises
DuplicateFlagError.
"""

import sys


class Error(Exception):
    """The base of the flag errors (absl.flags.Error)."""


class IllegalFlagValueError(Error, ValueError):
    """A flag's value could not be parsed (or is out of bounds)."""


class DuplicateFlagError(Error, ValueError):
    """A flag of that name is defined already."""


class UnrecognizedFlagError(Error, AttributeError):
    """No flag of that name is defined."""


_TRUE = ("true", "t", "1", "yes", "y")
_FALSE = ("false", "f", "0", "no", "n")


def _parse_bool(text):
    if isinstance(text, bool):
        return text
    low = str(text).lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError("not a boolean: %r (use true or false)" % (text,))


def _parse_int(text):
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    try:
        return int(text)
    except ValueError:
        return int(text, 0)  # 0x1f, 0o17


class _Flag:
    """One flag: its name, default, help text and how a command-line value is parsed."""

    def __init__(self, name, default, help_text, parse, kind, is_bool=False, check=None):
        self.name = name
        self.help = help_text
        self.parse = parse
        self.kind = kind
        self.is_bool = is_bool
        self.check = check
        self.default = None if default is None else self.convert(default)
        self.value = self.default
        self.present = False

    def convert(self, value):
        try:
            value = self.parse(value)
        except (TypeError, ValueError) as e:
            raise IllegalFlagValueError("flag --%s=%s: %s" % (self.name, value, e)) from None
        if self.check is not None:
            problem = self.check(value)
            if problem:
                raise IllegalFlagValueError("flag --%s=%s: %s" % (self.name, value, problem))
        return value


class FlagValues:
    """The defined flags and their values (absl.flags.FlagValues); FLAGS is the one that
    DEFINE_* use by default. ``FLAGS(argv)`` parses argv and returns what it left: argv[0] and
    the arguments that are not defined flags."""

    def __init__(self):
        self.__dict__["_flags"] = {}
        self.__dict__["_parsed"] = False

    # ---- defining and reading ---------------------------------------------------------------

    def _define(self, flag):
        if flag.name in self._flags:
            raise DuplicateFlagError("the flag '%s' is defined twice" % flag.name)
        self._flags[flag.name] = flag

    def __getattr__(self, name):
        flags = self.__dict__["_flags"]
        if name not in flags:
            raise UnrecognizedFlagError("no flag named '%s' is defined (DEFINE_* it first)"
                                        % name)
        if not self.__dict__["_parsed"]:
            self(sys.argv, known_only=True)
        return flags[name].value

    def __setattr__(self, name, value):
        if name not in self._flags:
            raise UnrecognizedFlagError("no flag named '%s' is defined (DEFINE_* it first)"
                                        % name)
        flag = self._flags[name]
        flag.value = None if value is None else flag.convert(value)
        flag.present = True

    def __contains__(self, name):
        return name in self._flags

    def __iter__(self):
        return iter(list(self._flags))

    def __getitem__(self, name):
        return self._flags[name]

    def is_parsed(self):
        return self._parsed

    def mark_as_parsed(self):
        self.__dict__["_parsed"] = True

    def unparse_flags(self):
        """Every flag back to its default, and the command line not parsed yet."""
        for flag in self._flags.values():
            flag.value, flag.present = flag.default, False
        self.__dict__["_parsed"] = False

    def flag_values_dict(self):
        """{name: value} of every flag (parsing sys.argv first if nothing did)."""
        if not self._parsed:
            self(sys.argv, known_only=True)
        return {name: flag.value for name, flag in self._flags.items()}

    def get_flag_value(self, name, default):
        return self._flags[name].value if name in self._flags else default

    # ---- parsing ----------------------------------------------------------------------------

    def __call__(self, argv, known_only=True):
        """Parses the flags in argv[1:] and returns argv[0] plus what it left. Flags that are
        not defined are left (known_only, TF1's app.run behaviour) or an error."""
        argv = list(argv)
        if not argv:
            raise ValueError("FLAGS(argv): argv needs at least the program name")
        rest = [argv[0]]
        args = argv[1:]
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                rest.extend(args[i - 1:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            name, eq, value = arg.lstrip("-").partition("=")
            flag = self._flags.get(name)
            if flag is None and name.startswith("no") and not eq:
                negated = self._flags.get(name[2:])
                if negated is not None and negated.is_bool:
                    negated.value, negated.present = False, True
                    continue
            if flag is None:
                if not known_only:
                    raise UnrecognizedFlagError("unknown command line flag '%s'" % name)
                rest.append(arg)
                continue
            if not eq:
                if flag.is_bool:
                    value = "true"
                elif i < len(args):
                    value = args[i]
                    i += 1
                else:
                    raise IllegalFlagValueError("flag --%s needs a value" % name)
            flag.value, flag.present = flag.convert(value), True
        self.__dict__["_parsed"] = True
        return rest

    def usage(self):
        """The flags, their defaults and help, one a line."""
        lines = []
        for name in sorted(self._flags):
            flag = self._flags[name]
            lines.append("  --%s: %s\n    (default: %r; %s)" % (name, flag.help, flag.default,
                                                               flag.kind))
        return "\n".join(lines)


FLAGS = FlagValues()


def _bounds(lower_bound, upper_bound):
    def check(value):
        if value is None:
            return None
        if lower_bound is not None and value < lower_bound:
            return "must be >= %s" % lower_bound
        if upper_bound is not None and value > upper_bound:
            return "must be <= %s" % upper_bound
        return None
    return check


def _name(name):
    if not isinstance(name, str) or not name or name.startswith("-") or "=" in name:
        raise ValueError("a flag name is a non-empty string without '-' in front or '=', "
                         "got %r" % (name,))
    return name


def DEFINE_string(name, default, help, flag_values=FLAGS, **kwargs):  # noqa: N802,A002
    """A string flag: --name=value."""
    flag_values._define(_Flag(_name(name), default, help, str, "a string"))


def DEFINE_integer(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802
                   flag_values=FLAGS, **kwargs):  # noqa: A002
    """An int flag, optionally bounded: --name=42."""
    flag_values._define(_Flag(_name(name), default, help, _parse_int, "an integer",
                              check=_bounds(lower_bound, upper_bound)))


def DEFINE_float(name, default, help, lower_bound=None, upper_bound=None,  # noqa: N802
                 flag_values=FLAGS, **kwargs):  # noqa: A002
    """A float flag, optionally bounded: --name=0.5."""
    flag_values._define(_Flag(_name(name), default, help, float, "a float",
                              check=_bounds(lower_bound, upper_bound)))


def DEFINE_boolean(name, default, help, flag_values=FLAGS, **kwargs):  # noqa: N802,A002
    """A bool flag: --name, --noname, --name=true/false."""
    flag_values._define(_Flag(_name(name), default, help, _parse_bool, "a boolean",
                              is_bool=True))


DEFINE_bool = DEFINE_boolean


def DEFINE_enum(name, default, enum_values, help, flag_values=FLAGS, **kwargs):  # noqa: N802,A002
    """A string flag that must be one of `enum_values`."""
    choices = list(enum_values)
    if not choices:
        raise ValueError("DEFINE_enum('%s'): enum_values is empty" % name)

    def check(value):
        return None if value is None or value in choices else "must be one of %s" % choices
    flag_values._define(_Flag(_name(name), default, help, str, "one of %s" % choices,
                              check=check))


def _parse_list(value):
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [v.strip() for v in str(value).split(",") if v.strip()]


def DEFINE_list(name, default, help, flag_values=FLAGS, **kwargs):  # noqa: N802,A002
    """A comma-separated list of strings: --name=a,b,c."""
    flag_values._define(_Flag(_name(name), default, help, _parse_list,
                              "a comma-separated list"))


__all__ = ["DEFINE_bool", "DEFINE_boolean", "DEFINE_enum", "DEFINE_float", "DEFINE_integer",
           "DEFINE_list", "DEFINE_string", "DuplicateFlagError", "Error", "FLAGS", "FlagValues",
           "IllegalFlagValueError", "UnrecognizedFlagError"]
