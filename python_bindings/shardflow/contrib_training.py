"""tf.contrib.training.HParams, as TF 1.15's: named hyperparameters whose types are fixed by
their first values, overridden from a "name=value,..." string (parse), a dict
(override_from_dict) or JSON (parse_json).

Example::

    hp = sf.contrib.training.HParams(learning_rate=0.1, layers=[64, 64], act="relu")
    hp.parse("learning_rate=0.05,layers=[128,128,10],act=tanh")
    hp.learning_rate            # 0.05
    hp.values()                 # {'learning_rate': 0.05, 'layers': [128, 128, 10], ...}

An int parameter takes no float ("a=1.5" is a ValueError), a float takes an int (as a float);
a bool parses "true"/"True"/"false"/"False" or an integer; a list parameter takes "[a,b]";
"name[i]=v" sets one element of a list parameter.
"""

import json
import numbers
import re

_PARAM_RE = re.compile(r"""
  (?P<name>[a-zA-Z][\w\.]*)       # name: "var" or "x"
  (\[\s*(?P<index>\d+)\s*\])?     # (optional) index: "1"
  \s*=\s*
  ((?P<val>[^,\[]*)               # one value: "a"
   |
   \[(?P<vals>[^\]]*)\])          # a list of values: "1,2,3"
  ($|,\s*)""", re.VERBOSE)


def _parse_fail(name, var_type, value, values):
    raise ValueError("Could not parse hparam '%s' of type '%s' with value '%s' in %s"
                     % (name, var_type.__name__, value, values))


def _reuse_fail(name, values):
    raise ValueError("Multiple assignments to variable '%s' in %s" % (name, values))


def _bool_parser(name, values):
    def parse(value):
        if value in ("true", "True"):
            return True
        if value in ("false", "False"):
            return False
        try:
            return bool(int(value))
        except ValueError:
            _parse_fail(name, bool, value, values)
    return parse


def parse_values(values, type_map, ignore_unknown=False):
    """{name: value} (or {name: {index: value}} for "name[i]=v") from "a=1,b=[2,3]", each
    value parsed as type_map[name]; an unknown name is a ValueError unless ignore_unknown."""
    results = {}
    pos = 0
    while pos < len(values):
        m = _PARAM_RE.match(values, pos)
        if not m:
            raise ValueError("Malformed hyperparameter value: %s" % values[pos:])
        pos = m.end()
        d = m.groupdict()
        name = d["name"]
        if name not in type_map:
            if ignore_unknown:
                continue
            raise ValueError("Unknown hyperparameter type for %s" % name)
        type_ = type_map[name]
        parse = _bool_parser(name, values) if type_ is bool else type_
        if d["val"] is not None:
            try:
                parsed = parse(d["val"])
            except ValueError:
                _parse_fail(name, type_, d["val"], values)
            if not d["index"]:
                if name in results:
                    _reuse_fail(name, values)
                results[name] = parsed
            else:
                if name in results and not isinstance(results[name], dict):
                    _reuse_fail(name, values)
                slots = results.setdefault(name, {})
                index = int(d["index"])
                if index in slots:
                    _reuse_fail("%s[%d]" % (name, index), values)
                slots[index] = parsed
        elif d["vals"] is not None:
            if d["index"] is not None:
                raise ValueError("Assignment of a list to a list index.")
            if name in results:
                _reuse_fail(name, values)
            try:
                results[name] = [parse(e) for e in re.split("[ ,]", d["vals"]) if e]
            except ValueError:
                _parse_fail(name, type_, d["vals"], values)
        else:
            _parse_fail(name, type_, "", values)
    return results


def _cast(name, param_type, value):
    """`value` as `param_type`, refusing the casts TF1 refuses (str <-> non-str, bool <->
    non-bool, float -> int, non-number -> number)."""
    fail = "Could not cast hparam '%s' of type '%s' from value %r" % (name, param_type, value)
    if issubclass(type(value), param_type):
        return value
    if issubclass(param_type, type(None)):
        return value
    if issubclass(param_type, (str, bytes)) and not isinstance(value, (str, bytes)):
        raise ValueError(fail)
    if issubclass(param_type, bool) != isinstance(value, bool):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Integral) and not isinstance(value, numbers.Integral):
        raise ValueError(fail)
    if issubclass(param_type, numbers.Number) and not isinstance(value, numbers.Number):
        raise ValueError(fail)
    return param_type(value)


class HParams:
    """Hyperparameters as attributes (see the module). Not thread-safe."""

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        if hparam_def is not None:
            raise ValueError("HParams(hparam_def=...): HParamDef protos are not supported; "
                             "give the values as keyword arguments")
        self._hparam_types = {}
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name, value):
        """Adds `name` (not yet a parameter or an attribute of HParams) with `value`; its
        type (of the first element, for a list) is fixed from now on."""
        if getattr(self, name, None) is not None:
            raise ValueError("Hyperparameter name is reserved: %s" % name)
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError("Multi-valued hyperparameters cannot be empty: %s" % name)
            self._hparam_types[name] = (type(value[0]), True)
        else:
            self._hparam_types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name, value):
        """Sets the existing parameter `name` (a KeyError if there is none), cast to its type;
        a list parameter takes a list (or {index: value}), a single one a single value."""
        param_type, is_list = self._hparam_types[name]
        if isinstance(value, dict) and is_list:
            current = list(getattr(self, name))
            for index, v in value.items():
                if index >= len(current):
                    raise ValueError("hparam %s has %d elements; cannot set [%d]"
                                     % (name, len(current), index))
                current[index] = _cast(name, param_type, v)
            setattr(self, name, current)
        elif isinstance(value, list):
            if not is_list:
                raise ValueError("Must not pass a list for single-valued parameter: %s" % name)
            setattr(self, name, [_cast(name, param_type, v) for v in value])
        else:
            if is_list:
                raise ValueError("Must pass a list for multi-valued parameter: %s." % name)
            setattr(self, name, _cast(name, param_type, value))

    def del_hparam(self, name):
        if hasattr(self, name):
            delattr(self, name)
            del self._hparam_types[name]

    def parse(self, values):
        """Overrides parameters from "name=value,list=[a,b],name[i]=v"; returns self."""
        type_map = {name: t for name, (t, _) in self._hparam_types.items()}
        return self.override_from_dict(parse_values(values, type_map))

    def override_from_dict(self, values_dict):
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def set_model_structure(self, model_structure):
        self._model_structure = model_structure

    def get_model_structure(self):
        return self._model_structure

    def to_json(self, indent=None, separators=None, sort_keys=False):
        """The values as JSON (callables left out)."""
        def drop_callables(x):
            if isinstance(x, dict):
                return {k: drop_callables(v) for k, v in x.items() if not callable(v)}
            if isinstance(x, list):
                return [drop_callables(i) for i in x if not callable(i)]
            return x
        return json.dumps(drop_callables(self.values()), indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def parse_json(self, values_json):
        return self.override_from_dict(json.loads(values_json))

    def values(self):
        """{name: value} of every parameter."""
        return {n: getattr(self, n) for n in self._hparam_types}

    def get(self, key, default=None):
        """The value of `key`, else `default` (which must fit the parameter's type)."""
        if key not in self._hparam_types:
            return default
        if default is not None:
            param_type, is_list = self._hparam_types[key]
            type_str = "list<%s>" % param_type if is_list else str(param_type)
            fail = "Hparam '%s' of type '%s' is incompatible with default=%s" % (key, type_str,
                                                                                  default)
            if is_list != isinstance(default, list):
                raise ValueError(fail)
            try:
                for v in (default if is_list else [default]):
                    _cast(key, param_type, v)
            except ValueError as e:
                raise ValueError("%s. %s" % (fail, e))
        return getattr(self, key)

    def __contains__(self, key):
        return key in self._hparam_types

    def __str__(self):
        return str(sorted(self.values().items()))

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self.__str__())


# TF1's ps placement helpers live here too (tf.contrib.training.*): balance variables over
# the ps tasks by bytes (shardflow/cluster.py).
from shardflow.cluster import GreedyLoadBalancingStrategy  # noqa: E402


def byte_size_load_fn(op):
    """The bytes of the variable `op` makes (its shape times its dtype's size; an unknown
    dimension counts as 1), the load GreedyLoadBalancingStrategy balances by default."""
    from shardflow.cluster import _variable_bytes
    return _variable_bytes(op)


class RandomStrategy:
    """Puts each variable on a ps task chosen by a hash of its op's name and `seed`, as TF1's
    tf.contrib.training.RandomStrategy: the same task in every process (the MD5 of
    "<name>_<seed>"), whatever the order the variables are made in."""

    def __init__(self, num_ps_tasks, seed=0):
        if int(num_ps_tasks) < 1:
            raise ValueError("RandomStrategy needs at least one ps task, got %r"
                             % (num_ps_tasks,))
        self._num_tasks, self._seed = int(num_ps_tasks), int(seed)

    def __call__(self, op):
        import hashlib
        key = ("%s_%d" % (op.name, self._seed)).encode()
        return int(hashlib.md5(key).hexdigest(), 16) % self._num_tasks


__all__ = ["GreedyLoadBalancingStrategy", "HParams", "RandomStrategy", "byte_size_load_fn",
           "parse_values"]
