"""TF1's control flow: tf.cond, tf.case and tf.while_loop, as functional ops.

cond builds one If op and while_loop one While op (Note [While as a function call] in
ops/control_flow_ops.cc): the branches, the loop's cond and its body are traced once into
function graphs (_FuncGraph), outer tensors they use are passed in, and the kernel calls the
function it needs. Only the branch taken runs, side effects included, as in TF1; gradients flow
through both ops.
"""

import numpy as np

from shardflow import array_ops, dtypes, ops
from shardflow.framework import (Operation, Tensor, _FuncGraph, _InputList,
                                 _loop_random_key_start, _plain_dims, _shape_or_none,
                                 convert_to_tensor, get_default_graph)


def _flatten(x):
    from shardflow.tensor_array import TensorArray
    if isinstance(x, TensorArray):
        # A fixed-size array is its buffer (Note [TensorArray as a buffer] in tensor_array.py);
        # a growing one is no loop variable (Note [Growing TensorArrays] there).
        return [] if x._dynamic else [x.flow]
    if isinstance(x, (list, tuple)):
        out = []
        for item in x:
            out.extend(_flatten(item))
        return out
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _flatten(x[k])]
    return [x]


def _pack(structure, flat, arrays=None):
    """`flat` in the structure of `structure`; its growing TensorArrays replaced, in order, by
    those of `arrays`."""
    it = iter(flat)
    arrays = iter(arrays or [])

    from shardflow.tensor_array import TensorArray

    def rebuild(x):
        if isinstance(x, TensorArray):
            if x._dynamic:
                replacement = next(arrays, None)
                if replacement is None:
                    raise ValueError("a TensorArray with dynamic_size (or a tensor size) "
                                     "can pass through while_loop but not through cond")
                return replacement
            return x._with(next(it))
        if isinstance(x, tuple):
            items = [rebuild(i) for i in x]
            return type(x)(*items) if hasattr(x, "_fields") else tuple(items)  # namedtuples
        if isinstance(x, list):
            return [rebuild(i) for i in x]
        if isinstance(x, dict):
            return {k: rebuild(x[k]) for k in sorted(x)}
        return next(it)
    return rebuild(structure)


def _growing_arrays(x):
    """The growing TensorArrays in `x`, in the order _flatten visits it."""
    from shardflow.tensor_array import TensorArray
    if isinstance(x, TensorArray):
        return [x] if x._dynamic else []
    if isinstance(x, (list, tuple)):
        return [a for item in x for a in _growing_arrays(item)]
    if isinstance(x, dict):
        return [a for k in sorted(x) for a in _growing_arrays(x[k])]
    return []


def _merged_shape(a, b):
    """The most specific shape both branch results have (None where they differ)."""
    sa, sb = _shape_or_none(a), _shape_or_none(b)
    if sa is None or sb is None or len(sa) != len(sb):
        return None
    return [x if x == y else None for x, y in zip(sa, sb)]


def _trace_branch(g, prefix, fn, what, strict):
    fg = _FuncGraph(g, prefix)
    fg._rng_mode = "branch"   # Note [Random ops in functions] in framework.py
    with fg.as_default():
        result = fn()
        if not strict and isinstance(result, (list, tuple)) and len(result) == 1:
            result = result[0]      # as TF1's: a singleton is unpacked unless strict
        flat = []
        for r in _flatten(result if isinstance(result, (list, tuple, dict)) else [result]):
            if r is None:
                raise ValueError("cond: the %s branch returned None; return tensors (or ops)"
                                 % what)
            if isinstance(r, Operation):
                # An op (tf.no_op, tf.group): a value that depends on it, so it runs.
                with fg.control_dependencies([r]):
                    r = ops.constant(True, name="done")
            elif not isinstance(r, Tensor) or r.graph is not fg:
                r = convert_to_tensor(r)
                if r.graph is not fg:
                    r = fg._capture(r) if fg._encloses(r.graph) else r
                    r = ops.identity(r)
            flat.append(r)
    return fg, result, flat


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """TF1's tf.cond: the value of true_fn() where `pred` (a scalar bool tensor) is true, else
    of false_fn(). One If op: only the branch taken runs (its assigns and updates included);
    gradients flow to the tensors the taken branch used.

    Example: ``h = tf.cond(is_training, lambda: tf.nn.dropout(h, 0.5), lambda: h)``.
    """
    true_fn = fn1 if true_fn is None else true_fn
    false_fn = fn2 if false_fn is None else false_fn
    if true_fn is None or false_fn is None:
        raise ValueError("cond needs true_fn and false_fn")
    for fn, what in ((true_fn, "true_fn"), (false_fn, "false_fn")):
        if not callable(fn):
            raise TypeError("%s must be callable (a function or lambda: ..., got %r)"
                            % (what, fn))
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool (a bool tensor, as TF1's cond; for a "
                        "Python bool call the branch function directly)")
    pred = convert_to_tensor(pred)
    if pred.dtype != dtypes.bool_:
        raise TypeError("cond: pred must be a bool tensor, not %s" % pred.dtype.name)
    if pred.shape.ndims not in (None, 0):
        raise ValueError("cond: pred must be a scalar, got shape %s" % pred.shape.as_list())
    g = get_default_graph()
    if isinstance(g, _FuncGraph) and pred.graph is not g and g._encloses(pred.graph):
        pred = g._capture(pred)
    with g.name_scope(name or "cond") as scope:
        prefix = scope[:-1]
    then_g, structure, then_out = _trace_branch(g, prefix + "/true", true_fn, "true", strict)
    else_g, else_structure, else_out = _trace_branch(g, prefix + "/false", false_fn, "false",
                                                     strict)
    _check_same_structure(structure, else_structure)
    if len(then_out) != len(else_out):
        raise ValueError("cond: the branches return different structures (%d and %d values)"
                         % (len(then_out), len(else_out)))
    for i, (a, b) in enumerate(zip(then_out, else_out)):
        if a.dtype != b.dtype:
            raise ValueError("cond: the branches return %s and %s as value %d"
                             % (a.dtype.name, b.dtype.name, i))
    then_fresh, else_fresh = _fresh_reads(then_g, else_g)
    captures = _union_captures(then_g, else_g)
    attrs = {
        "then_branch": _function_attr(then_g, [], then_out, captures, then_fresh),
        "else_branch": _function_attr(else_g, [], else_out, captures, else_fresh),
        "Tout": [t.dtype._enum for t in then_out],
        "output_shapes": [_merged_shape(a, b) for a, b in zip(then_out, else_out)],
    }
    with g.control_dependencies(_hoisted(then_g, else_g)):
        op = g._add_op("If", [pred, _InputList(captures)], attrs,
                       name=prefix.rsplit("/", 1)[-1])
    flat_results = _flat_results(structure)
    outputs = [op if isinstance(r, Operation) else op.outputs[i]
               for i, r in enumerate(flat_results)]
    if name and len(outputs) == 1 and not isinstance(outputs[0], Operation):
        outputs = [ops.identity(outputs[0], name=name)]
    if not isinstance(structure, (list, tuple, dict)):
        return outputs[0]
    return _pack(structure, outputs)


def _check_same_structure(a, b):
    """As TF1's cond: ValueError where the branches' results nest differently (dict keys,
    nesting, lengths), TypeError where their sequence types differ (a list and a tuple)."""
    from shardflow import nest
    try:
        nest.assert_same_structure(a, b)
    except ValueError as e:
        raise ValueError("true_fn and false_fn arguments to tf.cond must have the same number, "
                         "type, and overall structure of return values. %s" % e) from None
    except TypeError as e:
        raise TypeError("Incompatible return types of true_fn and false_fn: %s" % e) from None


def _flat_results(structure):
    return _flatten(structure if isinstance(structure, (list, tuple, dict)) else [structure])


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """TF1's tf.case: the first pair whose predicate is true, else `default` (nested conds:
    only the branch taken runs)."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else \
        list(pred_fn_pairs)
    if default is None:
        if not pairs:
            raise ValueError("case needs pairs or a default")
        pairs, (_, default) = pairs[:-1], pairs[-1]
    if exclusive and len(pairs) > 1:
        # As TF1's: the step fails when more than one predicate holds.
        from shardflow import check_ops
        preds = [convert_to_tensor(p) for p, _ in pairs]
        true_count = ops.add_n([ops.cast(p, dtypes.int32) for p in preds])
        check = check_ops._check(ops.less_equal(true_count, 1),
                                 "Input error: exclusive=True: more than 1 conditions (%s) "
                                 "evaluated as True" % ", ".join(p.name for p in preds),
                                 None, "case_exclusive")
        with get_default_graph().control_dependencies([check]):
            pairs[0] = (ops.identity(preds[0]), pairs[0][1])
    result_fn = default
    for pred, fn in reversed(pairs):
        result_fn = (lambda p, f, rest: lambda: cond(p, f, rest, strict=strict))(
            pred, fn, result_fn)
    return result_fn()


def _loop_function(g, prefix, fn, structure, flat, invariants, arrays, rng_mode=None):
    """Traces `fn` into a function graph; returns (graph, arg placeholders, results, the
    growing TensorArrays `arrays` as fn saw them)."""
    fg = _FuncGraph(g, prefix)
    fg._rng_mode = rng_mode
    with fg.as_default():
        args = []
        for i, v in enumerate(flat):
            shape = invariants[i] if invariants is not None else _shape_or_none(v)
            args.append(ops.placeholder(v.dtype, shape=shape, name="arg_%d" % i))
        inner = [a._entering_loop() for a in arrays]
        packed = _pack(structure, args, inner)
        result = fn(*packed) if isinstance(structure, (list, tuple)) else fn(packed)
    return fg, args, result, inner


def _array_writes(arrays, inner, returned, body_g):
    """For each growing array the body wrote: (its position in `arrays`, the index, the row),
    tensors of body_g (Note [Growing TensorArrays] in tensor_array.py)."""
    if len(returned) != len(inner):
        raise ValueError("while_loop: body returned %d growing TensorArrays for %d in "
                         "loop_vars" % (len(returned), len(inner)))
    writes = []
    for k, (entered, out) in enumerate(zip(inner, returned)):
        if out._loop is not entered._loop:
            raise ValueError("while_loop: body returned TensorArray %d in another place "
                             "than it came in" % k)
        if out._pending is None:
            continue
        if entered._loop.read:
            raise ValueError("while_loop: body reads and writes TensorArray %s, whose size "
                             "is dynamic; give it a fixed size and a fully known "
                             "element_shape for that (Note [Growing TensorArrays] in "
                             "shardflow/tensor_array.py)" % out._name)
        index, row = out._pending
        index, row = [body_g._capture(t) if t.graph is not body_g else t for t in (index, row)]
        dims = _shape_or_none(row)
        declared = arrays[k]._element_shape
        if dims is not None and None not in dims:
            init = ops.zeros(dims, dtype=row.dtype)
        elif declared is not None and None not in declared:
            with body_g.as_default():
                row = ops.reshape(row, declared)
            init = ops.zeros(declared, dtype=row.dtype)
        elif arrays[k]._value is not None:
            # The rows before the loop give the element shape when the step runs.
            init = ops.fill(ops.shape(arrays[k]._value)[1:], ops.constant(0, dtype=row.dtype))
        elif dims is not None:
            # Known only when the step runs (a batch of rows): the row enters empty, unknown
            # dimensions 0, and the loop keeps the history of the rows after it (While's
            # kernel, runtime/while_op.cc).
            init = ops.zeros([0 if d is None else d for d in dims], dtype=row.dtype)
        else:
            raise ValueError("while_loop: TensorArray %s is written a row of unknown rank in "
                             "the body; give element_shape=, or write an element before the "
                             "loop" % out._name)
        with body_g.as_default():
            writes.append((k, ops.reshape(index, []), row, init))
    return writes


def _hoisted(*graphs):
    """The outer ops that `graphs` named in control_dependencies (framework.py keeps them
    aside): the op of these functions waits for them, as TF1's loop and cond do."""
    return [op for fg in graphs for op in getattr(fg, "_hoisted_control_inputs", [])]


def _compatible(a, b):
    """Whether static shapes `a` and `b` (lists, None where unknown) can be one shape."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _shape_text(dims):
    return "(%s)" % ", ".join("?" if d is None else str(d) for d in dims) if len(dims) != 1 \
        else "(%s,)" % ("?" if dims[0] is None else dims[0])


def _check_loop_shapes(flat, results, invariants):
    """As TF1's while_loop, when the graph is built: a shape invariant must fit the loop
    variable's initial shape, and the body must return each variable in a shape that fits its
    invariant (its initial shape without one)."""
    for k, (v, r) in enumerate(zip(flat, results)):
        entering = _shape_or_none(v)
        if invariants is not None:
            if not _compatible(entering, invariants[k]):
                raise ValueError(
                    "The shape invariant specified for %s is not compatible with the initial "
                    "shape of the loop variable. It enters the loop with shape %s, but the "
                    "specified shape invariant is %s."
                    % (v.name, _shape_text(entering), _shape_text(invariants[k])))
            allowed = invariants[k]
        else:
            allowed = entering
        leaving = _shape_or_none(r)
        if not _compatible(allowed, leaving):
            if invariants is None:
                raise ValueError(
                    "Input tensor '%s' enters the loop with shape %s, but has shape %s after "
                    "one iteration. To allow the shape to vary across iterations, use the "
                    "`shape_invariants` argument of tf.while_loop to specify a less-specific "
                    "shape." % (v.name, _shape_text(entering), _shape_text(leaving)))
            raise ValueError(
                "Input tensor '%s' enters the loop with shape %s, but has shape %s after one "
                "iteration, which does not fit its shape invariant %s."
                % (v.name, _shape_text(entering), _shape_text(leaving),
                   _shape_text(allowed)))


def _union_captures(*graphs):
    """The outer tensors any of `graphs` captured, each once, in the order first taken: every
    function of one op takes all of them, in this order."""
    captures, seen = [], set()
    for fg in graphs:
        for outer, _ in fg._captures:
            key = (id(outer.graph), outer.name)
            if key not in seen:
                seen.add(key)
                captures.append(outer)
    return captures


# Note [Variables read in a loop or branch]. A variable used in a body, a loop's cond or a
# branch is captured as its one read of the step (Variable.value in shardflow/variables.py),
# taken before the loop starts. That is TF1's value as long as nothing changes the variable
# during the loop; where the loop (its cond or body, or a branch of the cond) assigns the
# variable itself, TF1 reads it afresh in each iteration: `v.assign(v * 2.0)` in a body doubles
# v each time, and `while_loop(lambda i: w < 5.0, ...)` whose body adds to w stops. So once cond
# and body (or both branches) are traced, each function that captured the read of a variable
# any of them assigns reads it afresh instead: a ReadVariableOp of the captured handle, wired in
# the function's GraphDef where the captured value was (_function_attr). Those reads are not
# differentiated: the gradient with respect to such a variable through the loop or cond is zero
# there. Other variables keep the captured read (no copy per iteration, gradients flow).


def _fresh_reads(*graphs):
    """Captures the handle of each variable that `graphs` (the functions of one op) assign and
    whose read one of them captured: Note [Variables read in a loop or branch]. Returns, per
    graph, [(the captured read, the captured handle, the variable)]; before _union_captures."""
    assigned = {}
    for fg in graphs:
        assigned.update(getattr(fg, "_assigned_variables", {}))
    plan = []
    for fg in graphs:
        fresh = []
        for v in assigned.values():
            read = fg._capture_of.get((id(v.graph), v._read.name))
            if read is not None:
                fresh.append((read, fg._capture(v.handle), v))
        plan.append(fresh)
    return plan


def _function_attr(fg, args, results, captures, fresh=()):
    names = [a.op.name for a in args] + [fg._capture(t).op.name for t in captures]
    graph_def = fg._as_graph_def_bytes()
    rets = [r.name for r in results]
    if fresh:
        graph_def, rets = _read_afresh(graph_def, rets, fresh)
    return (graph_def, names, rets)


def _read_afresh(graph_def_bytes, rets, fresh):
    """The function's GraphDef with each use of a captured read replaced by a ReadVariableOp
    of the captured handle (Note [Variables read in a loop or branch])."""
    from shardflow.graph_io import graph_def_from_bytes
    graph_def = graph_def_from_bytes(graph_def_bytes)
    taken = {n.name for n in graph_def.node}
    renamed = {}
    for read, handle, v in fresh:
        node = graph_def.node.add()
        node.name = read.op.name + "_afresh"
        while node.name in taken:
            node.name += "_"
        node.op = "ReadVariableOp"
        node.input.append(handle.name)
        node.attr["dtype"].type = v.dtype._enum
        node.device = v.device or ""
        renamed[read.name] = node.name + ":0"
    for node in graph_def.node:
        for k, name in enumerate(node.input):
            if name in renamed:
                node.input[k] = renamed[name]
    return graph_def.SerializeToString(), [renamed.get(r, r) for r in rets]


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """TF1's tf.while_loop: ``while cond(*vars): vars = body(*vars)``, in the graph.

    `loop_vars` is a (nested) list or tuple of tensors; body returns the same structure. The
    loop is one While op (Note [While as a function call] in ops/control_flow_ops.cc): cond and
    body are traced once into functions, outer tensors they use are passed in, ops they build
    run on the loop's device unless they ask for another (a body may span devices), and
    gradients flow through the loop to its inputs and to the outer tensors (variables) the body
    uses. A loop variable keeps its dtype and shape unless `shape_invariants` relaxes it
    (then, with back_prop, it must still keep one shape per run). `maximum_iterations` (an int,
    or a scalar tensor such as tf.shape(x)[1]) bounds the loop. parallel_iterations and
    swap_memory are accepted and ignored: iterations run one after another.

    Example::

        i, acc = sf.while_loop(lambda i, acc: i < 10,
                               lambda i, acc: (i + 1, acc * x),
                               [0, sf.ones_like(x)])
    """
    single = not isinstance(loop_vars, (list, tuple))
    if isinstance(maximum_iterations, Tensor):
        return _bounded_by_tensor(cond, body, loop_vars, shape_invariants, back_prop, name,
                                  maximum_iterations, single, return_same_structure)
    op, _, arrays = _build_while(cond, body, loop_vars, shape_invariants, back_prop, name,
                                 maximum_iterations)
    outputs = list(op.outputs[:len(_flatten(loop_vars))])
    if not back_prop:
        # As TF1's: no gradient flows back through the loop (it keeps no history); the
        # gradient of a path through it is None, not an error.
        outputs = [ops.stop_gradient(t) for t in outputs]
    if single:
        return _pack(loop_vars, outputs, arrays)   # a tensor, or a TensorArray
    if len(outputs) == 1 and not arrays and not return_same_structure:
        return outputs[0]
    return _pack(loop_vars, outputs, arrays)


def _bounded_by_tensor(cond, body, loop_vars, shape_invariants, back_prop, name, limit, single,
                       return_same_structure):
    """while_loop with a tensor maximum_iterations (tf.shape(x)[1], as decoders bound their
    loops): a counter loop variable in front, `counter < limit` and-ed into cond."""
    limit = ops.cast(ops.reshape(limit, []), dtypes.int32)

    def call(fn, values):
        return fn(*values) if not single else fn(values)

    def bounded_cond(i, values):
        return ops.logical_and(ops.less(i, limit), call(cond, values))

    def bounded_body(i, values):
        result = call(body, values)
        if not single and isinstance(result, list):
            result = type(loop_vars)(result) if isinstance(loop_vars, tuple) else result
        return ops.add(i, 1), result

    invariants = None if shape_invariants is None else ([], shape_invariants)
    _, values = while_loop(bounded_cond, bounded_body, (ops.constant(0), loop_vars),
                           shape_invariants=invariants, back_prop=back_prop, name=name,
                           return_same_structure=True)
    if single:
        return values
    flat = _flatten(values)
    if len(flat) == 1 and not _growing_arrays(values) and not return_same_structure:
        return flat[0]
    return values


def _build_while(cond, body, loop_vars, shape_invariants=None, back_prop=True, name=None,
                 maximum_iterations=None):
    """Builds the While op of while_loop; returns (op, number of loop variables, the growing
    TensorArrays of loop_vars as they leave the loop). Its outputs: the final loop variables,
    the number of iterations, then (back_prop) each variable as it entered every iteration,
    stacked ([iterations, ...]; dynamic_rnn reads its outputs there). The loop variables are
    those of loop_vars, then an (index, row) pair for each growing TensorArray the body writes
    (Note [Growing TensorArrays] in tensor_array.py)."""
    g = get_default_graph()
    structure = loop_vars
    arrays = _growing_arrays(loop_vars)
    flat = []
    for v in _flatten(loop_vars):
        t = convert_to_tensor(v)
        if isinstance(g, _FuncGraph) and t.graph is not g and g._encloses(t.graph):
            t = g._capture(t)
        flat.append(t)
    if not flat:
        raise ValueError("while_loop needs at least one loop variable")
    invariants = None
    if shape_invariants is not None:
        invariants = [_plain_dims(s) if s is not None else None
                      for s in _flatten_like(structure, shape_invariants)]
    if maximum_iterations is not None and not isinstance(maximum_iterations, int):
        raise TypeError("while_loop: maximum_iterations must be a Python int here (got %r); a "
                        "tensor bound can go into cond instead" % (maximum_iterations,))
    with g.name_scope(name or "while") as scope:
        prefix = scope[:-1]
    cond_g, cond_args, pred, _ = _loop_function(g, prefix + "/cond", cond, structure, flat,
                                                invariants, arrays)
    with cond_g.as_default():
        pred = convert_to_tensor(pred)
    if pred.dtype != dtypes.bool_ or pred.get_shape().ndims not in (None, 0):
        raise ValueError("while_loop: cond must return a bool scalar, not %s %s"
                         % (pred.dtype.name, pred.get_shape()))
    body_g, body_args, result, inner = _loop_function(g, prefix + "/body", body, structure,
                                                      flat, invariants, arrays,
                                                      "loop" if back_prop else None)
    with body_g.as_default():
        out = _flatten(result if isinstance(result, (list, tuple, dict)) else [result])
        if len(out) != len(flat):
            raise ValueError("while_loop: body returned %d values for %d loop variables"
                             % (len(out), len(flat)))
        results = []
        for v, r in zip(flat, out):
            if isinstance(r, Operation) or r is None:
                raise ValueError("while_loop: body must return tensors, got %r" % (r,))
            r = convert_to_tensor(r, dtype=v.dtype) if not isinstance(r, Tensor) else r
            if r.graph is not body_g:
                r = body_g._capture(r)
            if r.dtype != v.dtype:
                raise ValueError("while_loop: loop variable %s is %s but body returns %s"
                                 % (v.name, v.dtype.name, r.dtype.name))
            results.append(r)
    _check_loop_shapes(flat, results, invariants)
    writes = _array_writes(arrays, inner, _growing_arrays(result), body_g)
    if invariants is None and any(None in (_shape_or_none(row) or [None])
                                  for _, _, row, _ in writes):
        # A row known only when the step runs enters empty and then takes its shape: the
        # loop's variables keep the shapes they entered with, as far as they are known.
        invariants = [_shape_or_none(v) for v in flat]
    for k, index, row, row_init in writes:
        # Two more loop variables: the row written and its index (-1 before any iteration).
        for value, init in ((index, ops.constant(-1)), (row, row_init)):
            for fg, fg_args in ((cond_g, cond_args), (body_g, body_args)):
                with fg.as_default():
                    fg_args.append(ops.placeholder(value.dtype, shape=_shape_or_none(value),
                                                   name="arg_%d" % len(flat)))
            flat.append(init)
            results.append(value)
            if invariants is not None:
                invariants.append(_shape_or_none(value))
    if body_g._rng_key is not None:
        # The body's random ops are keyed by one more loop variable (Note [Random ops in
        # functions] in framework.py).
        with cond_g.as_default():
            cond_args.append(ops.placeholder(dtypes.int64, shape=[], name="random_key"))
        body_args.append(body_g._rng_key)
        flat.append(_loop_random_key_start(g))
        with body_g.as_default():
            results.append(ops.add(body_g._rng_key, np.int64(1)))
        if invariants is not None:
            invariants.append([])
    cond_fresh, body_fresh = _fresh_reads(cond_g, body_g)
    captures = _union_captures(cond_g, body_g)
    attrs = {
        "cond": _function_attr(cond_g, cond_args, [pred], captures, cond_fresh),
        "body": _function_attr(body_g, body_args, results, captures, body_fresh),
        "Thistory": [v.dtype._enum for v in flat] if back_prop or writes else [],
        "maximum_iterations": -1 if maximum_iterations is None else int(maximum_iterations),
    }
    if invariants is not None:
        attrs["output_shapes"] = [s if s is not None else None for s in invariants]
    with g.control_dependencies(_hoisted(cond_g, body_g)):
        op = g._add_op("While", [_InputList(flat), _InputList(captures)], attrs,
                       name=prefix.rsplit("/", 1)[-1])
    n = len(flat)
    leaving = list(arrays)
    first = n - 2 * len(writes) - (body_g._rng_key is not None)
    for w, (k, _, _, _) in enumerate(writes):
        rows = []
        for j in (first + 2 * w, first + 2 * w + 1):
            # Leaving the last iteration, then entering iterations 1..: every iteration's row
            # (the last input of Concat may have a size unknown when the graph is built).
            history = op.outputs[n + 1 + j]
            later = ops.maximum(ops.shape(history)[0] - 1, 0)   # no slice: there may be none
            later = ops.cumsum(ops.fill(ops.reshape(later, [1]), 1), exclusive=True) + 1
            every = ops.concat([ops.expand_dims(op.outputs[j], 0),
                                array_ops.gather(history, later)], 0)
            rows.append(every if back_prop else ops.stop_gradient(every))
        leaving[k] = arrays[k]._place(rows[0], rows[1])
    return op, n, leaving


def _flatten_like(structure, value):
    """`value` (shape invariants) in the structure of `structure` (loop_vars), flattened."""
    if isinstance(structure, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(structure):
            raise ValueError("while_loop: shape_invariants must have the structure of loop_vars")
        return [x for s, v in zip(structure, value) for x in _flatten_like(s, v)]
    if isinstance(structure, dict):
        return [x for k in sorted(structure) for x in _flatten_like(structure[k], value[k])]
    return [value]


__all__ = ["case", "cond", "while_loop"]
