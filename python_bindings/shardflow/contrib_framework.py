"""tf.contrib.framework under its TF1 names: arg_scope and add_arg_scope (default keyword
arguments for a set of functions), the global step (get_or_create_global_step,
get_global_step) and the variable look-ups get_variables, get_model_variables,
get_trainable_variables, get_local_variables, with model_variable / variable to make
variables that the look-ups find.

arg_scope, as TF1's: a function decorated with add_arg_scope takes, for every keyword it is
not given, the value the innermost enclosing arg_scope that names it set. Scopes nest; an
inner scope adds to (and overrides) the outer one's values for the same function; an
argument given at the call always wins. Only decorated functions may be named (the
contrib.layers functions are). The scope stack belongs to the thread that opens it.

Example::

    with sf.contrib.framework.arg_scope([layers.fully_connected], activation_fn=None,
                                        weights_regularizer=layers.l2_regularizer(1e-4)):
        h = layers.fully_connected(x, 64, activation_fn=sf.nn.relu)   # relu: the call wins
        logits = layers.fully_connected(h, 10)                         # linear, regularized
"""

import contextlib
import functools
import inspect
import threading

from shardflow.framework import GraphKeys, get_default_graph

_STACK = threading.local()
_DECORATED = set()


def _arg_stack():
    if not hasattr(_STACK, "scopes"):
        _STACK.scopes = [{}]
    return _STACK.scopes


def _key(func):
    return getattr(func, "_key_op", str(func))


def current_arg_scope():
    """The innermost arg_scope: a dict {function key: {argument: value}}."""
    return _arg_stack()[-1]


def has_arg_scope(func):
    """Whether `func` was decorated with add_arg_scope (so arg_scope may name it)."""
    return _key(func) in _DECORATED


def arg_scoped_arguments(func):
    """The names of the arguments of a decorated `func` that an arg_scope may set."""
    if not has_arg_scope(func):
        raise ValueError("%s is not decorated with @add_arg_scope" % (func,))
    return list(getattr(func, "_arg_names", []))


def add_arg_scope(func):
    """Decorates `func` so that arg_scope can set its keyword arguments (see the module)."""
    @functools.wraps(func)
    def with_scope(*args, **kwargs):
        scope = current_arg_scope()
        key = _key(with_scope)
        if key in scope:
            merged = dict(scope[key])
            merged.update(kwargs)
            kwargs = merged
        return func(*args, **kwargs)
    with_scope._key_op = _key(func)
    try:
        with_scope._arg_names = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        with_scope._arg_names = []
    _DECORATED.add(with_scope._key_op)
    return with_scope


@contextlib.contextmanager
def arg_scope(list_ops_or_scope, **kwargs):
    """``with arg_scope([f, g], a=1):`` sets a=1 for calls of f and g inside (merged over
    the enclosing scopes' values); ``with arg_scope(scope):`` re-enters a dict that an earlier
    arg_scope yielded (no keyword arguments then). Yields the new scope."""
    stack = _arg_stack()
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError("arg_scope: when re-entering a scope (a dict) give no keyword "
                             "arguments; got %s" % ", ".join(sorted(kwargs)))
        scope = list_ops_or_scope
    else:
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError("arg_scope takes a list or tuple of functions (or a scope dict), "
                            "not %r" % (list_ops_or_scope,))
        scope = {k: dict(v) for k, v in current_arg_scope().items()}
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError("%s is not decorated with @add_arg_scope; decorate it (or "
                                 "set its arguments at the call)" % (op,))
            key = _key(op)
            scope.setdefault(key, {}).update(kwargs)
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()


# ---- variables ----------------------------------------------------------------------------


def get_or_create_global_step(graph=None):
    """tf.train.get_or_create_global_step."""
    from shardflow import train
    return train.get_or_create_global_step(graph)


def get_global_step(graph=None):
    """tf.train.get_global_step: the graph's global step, or None."""
    from shardflow import train
    return train.get_global_step(graph)


def create_global_step(graph=None):
    """tf.train.create_global_step."""
    from shardflow import train
    return train.create_global_step(graph)


def get_variables(scope=None, suffix=None, collection=GraphKeys.GLOBAL_VARIABLES):
    """The variables of `collection` whose name starts with `scope` (a name, a regular
    expression or a VariableScope) and whose op name ends with `suffix`."""
    import re

    from shardflow import variables
    if scope is not None and not isinstance(scope, str):
        scope = scope.name
    # The variable collections are kept by the graph itself, not as collection lists.
    listing = {GraphKeys.GLOBAL_VARIABLES: variables.global_variables,
               GraphKeys.TRAINABLE_VARIABLES: variables.trainable_variables,
               GraphKeys.LOCAL_VARIABLES: variables.local_variables}.get(collection)
    found = listing() if listing else get_default_graph().get_collection(collection)
    if scope is not None:
        pattern = re.compile(scope)
        found = [v for v in found if pattern.match(v.name)]
    if suffix is not None:
        found = [v for v in found if v.op.name.endswith(suffix)]
    return found


def get_model_variables(scope=None, suffix=None):
    """The MODEL_VARIABLES collection, filtered as get_variables filters."""
    return get_variables(scope, suffix, GraphKeys.MODEL_VARIABLES)


def get_trainable_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.TRAINABLE_VARIABLES)


def get_local_variables(scope=None, suffix=None):
    return get_variables(scope, suffix, GraphKeys.LOCAL_VARIABLES)


def get_variables_by_name(given_name, scope=None):
    """The variables whose short name (after the last '/') is `given_name`."""
    return [v for v in get_variables(scope) if v.op.name.rsplit("/", 1)[-1] == given_name]


def variable(name, shape=None, dtype=None, initializer=None, regularizer=None, trainable=True,
             collections=None, device=None):
    """get_variable in the current variable scope, added to GLOBAL_VARIABLES and
    `collections` (contrib's variable)."""
    from shardflow.variable_scope import get_variable
    colls = [GraphKeys.GLOBAL_VARIABLES] + [c for c in (collections or [])
                                            if c != GraphKeys.GLOBAL_VARIABLES]
    g = get_default_graph()
    with (g.device(device) if device else contextlib.nullcontext()):
        return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                            regularizer=regularizer, trainable=trainable, collections=colls)


def model_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=True, collections=None, device=None):
    """A variable also in MODEL_VARIABLES (contrib's model_variable; what its layers make)."""
    colls = list(collections or []) + [GraphKeys.MODEL_VARIABLES]
    return variable(name, shape, dtype, initializer, regularizer, trainable, colls, device)


def get_variables_by_suffix(suffix, scope=None):
    return get_variables(scope=scope, suffix=suffix)


def get_unique_variable(var_op_name):
    """The one global variable whose op name is var_op_name (ValueError if none or several)."""
    found = [v for v in get_variables(collection=GraphKeys.GLOBAL_VARIABLES)
             if v.op.name == var_op_name]
    if len(found) != 1:
        raise ValueError("Couldn't find variable %s" % var_op_name if not found else
                         "Found %d variables named %s" % (len(found), var_op_name))
    return found[0]


def filter_variables(var_list, include_patterns=None, exclude_patterns=None, reg_search=True):
    """The variables of var_list whose names match some include pattern (all when None) and
    no exclude pattern; patterns are regular expressions searched in the name (matched from
    its start with reg_search=False)."""
    import re
    find = re.search if reg_search else re.match

    def hits(v, patterns):
        return any(find(p, v.name) for p in patterns)
    return [v for v in var_list
            if (include_patterns is None or hits(v, include_patterns))
            and not (exclude_patterns and hits(v, exclude_patterns))]


# slim's checkpoint helpers under contrib.framework's names, and tf.train's readers.
_FROM_SLIM = ("get_variables_to_restore", "assign_from_checkpoint", "assign_from_checkpoint_fn")
_FROM_TRAIN = ("list_variables", "load_variable", "load_checkpoint", "init_from_checkpoint")


def __getattr__(name):
    if name in _FROM_SLIM:
        from shardflow import contrib_slim
        return getattr(contrib_slim, name)
    if name in _FROM_TRAIN:
        from shardflow import train
        return getattr(train, name)
    raise AttributeError(
        "shardflow has no tf.contrib.framework.%s; it has %s" % (
            name, ", ".join(sorted(__all__ + list(_FROM_SLIM + _FROM_TRAIN)))))


__all__ = ["add_arg_scope", "arg_scope", "arg_scoped_arguments", "create_global_step",
           "current_arg_scope", "get_global_step", "get_local_variables",
           "get_model_variables", "get_or_create_global_step", "get_trainable_variables",
           "get_variables", "get_variables_by_name", "get_variables_by_suffix",
           "get_unique_variable", "filter_variables", "has_arg_scope", "model_variable",
           "variable"]
