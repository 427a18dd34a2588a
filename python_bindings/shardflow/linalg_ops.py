"""TF1's dense linear algebra: tf.matrix_inverse (tf.linalg.inv), tf.matrix_determinant (det),
tf.log_matrix_determinant (slogdet), tf.linalg.logdet, tf.matrix_solve (solve),
tf.matrix_triangular_solve (triangular_solve), tf.cholesky, tf.svd and tf.qr, on [..., M, N]
float32/float64 tensors.

The factorizations and solves are NumPy (LAPACK) in PyFunc nodes, so, like tf.py_func, they run
in the client's process; their gradients are graph ops (TF's formulas: d inv(A) = -A^-T dY A^-T,
d det = det * A^-T, the Cholesky gradient of Murray 2016, ...) attached with
gradient_override_map, so models that use them train. svd, qr and eigh have TF1's gradients
too, with TF1's limits (qr: not for wide matrices; svd with full_matrices: |M - N| <= 1).

Example::

    x = sf.matrix_solve(a, b)                      # a x = b
    l = sf.cholesky(cov)                           # cov = l l^T
    loss = sf.reduce_sum(sf.linalg.logdet(cov))    # trains through cov
"""

import numpy as np

from shardflow import dtypes, ops
from shardflow.framework import convert_to_tensor, get_default_graph
from shardflow.gradients import RegisterGradient
from shardflow.matrix_composites import matrix_band_part, matrix_diag, matrix_diag_part
from shardflow.script_ops import py_func


def _t(x):
    """The last two dimensions swapped."""
    n = x.shape.ndims
    return ops.transpose(x, list(range(n - 2)) + [n - 1, n - 2])


def _square(x, what):
    x = convert_to_tensor(x)
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) < 2 or dims[-1] is None or dims[-1] != dims[-2]:
        raise ValueError("%s takes [..., N, N] matrices with N known, got shape %s"
                         % (what, x.shape))
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError("%s takes float32 or float64 matrices, got %s" % (what, x.dtype.name))
    return x


def _numpy_op(fn, inputs, touts, shapes, grad_name, name):
    """A PyFunc node computing fn(*inputs) in NumPy (cast back to each output's dtype), whose
    gradient is the one registered as grad_name; outputs with their static shapes."""
    def run(*arrays):
        out = fn(*arrays)
        outs = out if isinstance(out, tuple) else (out,)
        return [np.asarray(o, dtype=t.as_numpy_dtype) for o, t in zip(outs, touts)]

    with get_default_graph().gradient_override_map({"PyFunc": grad_name}):
        outs = py_func(run, list(inputs), list(touts), stateful=False, name=name)
    outs = [ops.reshape(o, s) if None not in s else o for o, s in zip(outs, shapes)]
    return outs


# ---- gradients ----------------------------------------------------------------------------


def _shaped(t, shape):
    """`t` with the static shape `shape` where it is fully known (PyFunc outputs, and the
    gradients that reach them, have none)."""
    shape = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    return ops.reshape(t, shape) if None not in shape else t


def _out(op, i, shape):
    """Output i of the PyFunc node `op` with its static shape."""
    return _shaped(op.outputs[i], shape)


@RegisterGradient("SfMatrixInverse")
def _inverse_grad(op, grad):
    y = _out(op, 0, op.inputs[0].shape)
    grad = _shaped(grad, op.inputs[0].shape)
    return [-ops.matmul(_t(y), ops.matmul(grad, _t(y)))]


@RegisterGradient("SfMatrixDeterminant")
def _det_grad(op, grad):
    a = op.inputs[0]
    det = _out(op, 0, a.shape.as_list()[:-2])
    grad = _shaped(grad, a.shape.as_list()[:-2])
    scale = ops.expand_dims(ops.expand_dims(grad * det, -1), -1)
    return [scale * _t(matrix_inverse(a))]


@RegisterGradient("SfLogMatrixDeterminant")
def _slogdet_grad(op, grad_sign, grad_logdet):
    a = op.inputs[0]
    grad_logdet = _shaped(grad_logdet, a.shape.as_list()[:-2])
    return [ops.expand_dims(ops.expand_dims(grad_logdet, -1), -1) * _t(matrix_inverse(a))]


@RegisterGradient("SfMatrixSolve")
def _solve_grad(op, grad):
    a, x = op.inputs[0], _out(op, 0, op.inputs[1].shape)
    grad = _shaped(grad, op.inputs[1].shape)
    grad_b = matrix_solve(_t(a), grad)
    return [-ops.matmul(grad_b, _t(x)), grad_b]


def _triangular_grad(lower, adjoint):
    def grad_fn(op, grad):
        a, x = op.inputs[0], _out(op, 0, op.inputs[1].shape)
        grad = _shaped(grad, op.inputs[1].shape)
        grad_b = matrix_triangular_solve(a, grad, lower=lower, adjoint=not adjoint)
        grad_a = -(ops.matmul(x, _t(grad_b)) if adjoint else ops.matmul(grad_b, _t(x)))
        grad_a = matrix_band_part(grad_a, -1, 0) if lower else matrix_band_part(grad_a, 0, -1)
        return [grad_a, grad_b]
    return grad_fn


for _lower in (True, False):
    for _adjoint in (True, False):
        RegisterGradient("SfTriangularSolve-%d%d" % (_lower, _adjoint))(
            _triangular_grad(_lower, _adjoint))


@RegisterGradient("SfCholesky")
def _cholesky_grad(op, grad):
    l = _out(op, 0, op.inputs[0].shape)  # noqa: E741 (the Cholesky factor's usual name)
    grad = _shaped(grad, op.inputs[0].shape)
    n = l.shape.as_list()[-1]
    eye = ops.constant(np.eye(n, dtype=l.dtype.as_numpy_dtype))
    l_inverse = matrix_triangular_solve(l, eye + ops.zeros_like(l), lower=True)
    middle = ops.matmul(_t(l), grad)
    middle = middle - 0.5 * matrix_diag(matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = ops.matmul(ops.matmul(_t(l_inverse), middle), l_inverse)
    return [0.5 * (grad_a + _t(grad_a))]


def _eigh_grad_from(e, v, grad_e, grad_v):
    """d loss / d A of a symmetric eigendecomposition A = v diag(e) v^T (the standard formula
    TF1 uses: v (diag(grad_e) + F * v^T grad_v) v^T with F_ij = 1 / (e_j - e_i) off the
    diagonal), returned as TF1 does: symmetrized, on the lower triangle the op reads (the
    diagonal halved)."""
    middle = matrix_diag(grad_e) if grad_e is not None else ops.zeros_like(v)
    if grad_v is not None:
        gap = ops.expand_dims(e, -2) - ops.expand_dims(e, -1)
        n = v.shape.as_list()[-1]
        off = ops.constant(~np.eye(n, dtype=bool))
        from shardflow.array_ops import where_v2
        safe = where_v2(off, gap, ops.ones_like(gap))
        f = where_v2(ops.logical_and(off, ops.not_equal(gap, 0.0)), 1.0 / safe,
                     ops.zeros_like(gap))
        middle = middle + f * ops.matmul(_t(v), grad_v)
    grad_a = ops.matmul(v, ops.matmul(middle, _t(v)))
    grad_a = matrix_band_part(grad_a + _t(grad_a), -1, 0)
    n = v.shape.as_list()[-1]
    half = ops.constant(np.where(np.eye(n, dtype=bool), 0.5, 1.0).astype(
        v.dtype.as_numpy_dtype))
    return grad_a * half


@RegisterGradient("SfSelfAdjointEig")
def _self_adjoint_eig_grad(op, grad_e, grad_v):
    a = op.inputs[0]
    e, v = _out(op, 0, a.shape.as_list()[:-1]), _out(op, 1, a.shape)
    grad_e = _shaped(grad_e, a.shape.as_list()[:-1]) if grad_e is not None else None
    grad_v = _shaped(grad_v, a.shape) if grad_v is not None else None
    return [_eigh_grad_from(e, v, grad_e, grad_v)]


@RegisterGradient("SfSelfAdjointEigvals")
def _self_adjoint_eigvals_grad(op, grad_e):
    a = op.inputs[0]
    e, v = self_adjoint_eig(ops.stop_gradient(a))
    return [_eigh_grad_from(e, v, _shaped(grad_e, a.shape.as_list()[:-1]), None)]


def _safe_reciprocal(x):
    """1 / x, and 0 where x is 0 (the singular-value gaps of repeated values)."""
    from shardflow.array_ops import where_v2
    nonzero = ops.not_equal(x, 0.0)
    return where_v2(nonzero, 1.0 / where_v2(nonzero, x, ops.ones_like(x)), ops.zeros_like(x))


def _zeros_if_none(grad, like):
    return ops.zeros_like(like) if grad is None else _shaped(grad, like.shape)


@RegisterGradient("SfSvdValues")
def _svd_values_grad(op, grad_s):
    """d s: u diag(grad_s) v^T, as TF1's (compute_uv=False)."""
    a = op.inputs[0]
    grad_s = _shaped(grad_s, a.shape.as_list()[:-2] + [min(a.shape.as_list()[-2:])])
    _, u, v = svd(ops.stop_gradient(a), full_matrices=False)
    return [ops.matmul(u, ops.matmul(matrix_diag(grad_s), _t(v)))]


def _svd_grad(full_matrices):
    """TF1's SVD gradient (Giles 2008; Townsend's derivation for thin factors), for real
    matrices whose sizes the graph knows; computed for A^T when A is taller than wide."""
    def grad_fn(op, grad_s, grad_u, grad_v):
        a = op.inputs[0]
        m, n = a.shape.as_list()[-2:]
        batch, k = a.shape.as_list()[:-2], min(m, n)
        s = _out(op, 0, batch + [k])
        u = _out(op, 1, batch + [m, m if full_matrices else k])
        v = _out(op, 2, batch + [n, n if full_matrices else k])
        grad_s = _zeros_if_none(grad_s, s)
        grad_u, grad_v = _zeros_if_none(grad_u, u), _zeros_if_none(grad_v, v)
        transposed = m > n
        if transposed:                      # A^T = V S U^T
            m, n = n, m
            u, v, grad_u, grad_v = v, u, grad_v, grad_u
        if full_matrices and abs(m - n) > 1:
            raise NotImplementedError("svd gradient is not implemented for abs(m - n) > 1 "
                                      "when full_matrices is True (nor in TF1)")
        s_mat = matrix_diag(s)
        s2 = ops.square(s)
        f = matrix_set_diag_zero(_safe_reciprocal(ops.expand_dims(s2, -2) -
                                                  ops.expand_dims(s2, -1)))
        v1, grad_v1 = v[..., :, :m], grad_v[..., :, :m]
        f_u = f * ops.matmul(_t(u), grad_u)
        f_v = f * ops.matmul(_t(v1), grad_v1)
        middle = (matrix_diag(grad_s) + ops.matmul(f_u + _t(f_u), s_mat) +
                  ops.matmul(s_mat, f_v + _t(f_v)))
        grad_a = ops.matmul(u, ops.matmul(middle, _t(v1)))
        if m != n:
            gv1t = _t(grad_v1)
            rest = gv1t - ops.matmul(ops.matmul(gv1t, v1), _t(v1))
            if full_matrices:
                v2, grad_v2 = v[..., :, m:n], grad_v[..., :, m:n]
                rest = rest - ops.matmul(ops.matmul(_t(v1), grad_v2), _t(v2))
            grad_a = grad_a + ops.matmul(ops.matmul(u, matrix_diag(_safe_reciprocal(s))), rest)
        return [_t(grad_a) if transposed else grad_a]
    return grad_fn


def matrix_set_diag_zero(x):
    """x with the diagonal of each innermost square matrix set to 0."""
    n = x.shape.as_list()[-1]
    from shardflow.array_ops import where_v2
    return where_v2(ops.constant(np.eye(n, dtype=bool)), ops.zeros_like(x), x)


RegisterGradient("SfSvd-0")(_svd_grad(False))
RegisterGradient("SfSvd-1")(_svd_grad(True))


def _qr_grad(full_matrices):
    return lambda op, grad_q, grad_r: _qr_grad_fn(op, grad_q, grad_r, full_matrices)


def _qr_grad_fn(op, grad_q, grad_r, full_matrices):
    """TF1's QR gradient, for square or tall matrices with reduced factors (R square)."""
    a = op.inputs[0]
    m, n = a.shape.as_list()[-2:]
    k = m if full_matrices else min(m, n)
    q = _out(op, 0, a.shape.as_list()[:-2] + [m, k])
    r = _out(op, 1, a.shape.as_list()[:-2] + [k, n])
    if k != n:
        raise NotImplementedError("qr gradient is not implemented when the matrix is wider than "
                                  "tall, or for full_matrices=True with more rows than "
                                  "columns (nor in TF1)")
    grad_q, grad_r = _zeros_if_none(grad_q, q), _zeros_if_none(grad_r, r)
    qdq = ops.matmul(_t(q), grad_q)
    rdr = ops.matmul(r, _t(grad_r))
    tril = matrix_band_part(qdq - _t(qdq) + rdr - _t(rdr), -1, 0)

    def times_r_inverse_t(x):        # x R^-T, R upper triangular
        return _t(matrix_triangular_solve(r, _t(x), lower=False, adjoint=False))
    return [ops.matmul(q, grad_r + times_r_inverse_t(tril)) +
            times_r_inverse_t(grad_q - ops.matmul(q, qdq))]


@RegisterGradient("SfLu")
def _lu_grad(op, *grads):
    raise NotImplementedError("lu has no gradient (nor in TF 1.15)")


@RegisterGradient("SfLstsqRobust")
def _lstsq_robust_grad(op, grad):
    raise NotImplementedError("matrix_solve_ls(fast=False) has no gradient (nor in TF1); use "
                              "fast=True to train through it")


RegisterGradient("SfQr-0")(_qr_grad(False))
RegisterGradient("SfQr-1")(_qr_grad(True))


# ---- the ops --------------------------------------------------------------------------------


def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002
    """The inverse of each [N, N] matrix (of its transpose with adjoint=True)."""
    a = _square(input, "matrix_inverse")
    if adjoint:
        a = _t(a)
    return _numpy_op(np.linalg.inv, [a], [a.dtype], [a.shape.as_list()], "SfMatrixInverse",
                     name or "MatrixInverse")[0]


def matrix_determinant(input, name=None):  # noqa: A002
    """The determinant of each [N, N] matrix: [...]."""
    a = _square(input, "matrix_determinant")
    return _numpy_op(np.linalg.det, [a], [a.dtype], [a.shape.as_list()[:-2]],
                     "SfMatrixDeterminant", name or "MatrixDeterminant")[0]


def log_matrix_determinant(input, name=None):  # noqa: A002
    """(sign, log |det|) of each [N, N] matrix, as TF1's tf.log_matrix_determinant."""
    a = _square(input, "log_matrix_determinant")
    shape = a.shape.as_list()[:-2]
    sign, logdet = _numpy_op(lambda m: tuple(np.linalg.slogdet(m)), [a], [a.dtype, a.dtype],
                             [shape, shape], "SfLogMatrixDeterminant",
                             name or "LogMatrixDeterminant")
    return sign, logdet


def logdet(matrix, name=None):
    """log det of each symmetric positive definite matrix: 2 * sum(log(diag(cholesky)))."""
    l = cholesky(matrix)  # noqa: E741
    return ops.multiply(2.0, ops.reduce_sum(ops.log(matrix_diag_part(l)), axis=-1), name=name)


def matrix_solve(matrix, rhs, adjoint=False, name=None):
    """X with matrix X = rhs for each [N, N] matrix and [N, K] rhs (matrix^T X = rhs with
    adjoint=True)."""
    a = _square(matrix, "matrix_solve")
    b = convert_to_tensor(rhs, dtype=a.dtype)
    if adjoint:
        a = _t(a)
    return _numpy_op(np.linalg.solve, [a, b], [a.dtype], [b.shape.as_list()], "SfMatrixSolve",
                     name or "MatrixSolve")[0]


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """X with matrix X = rhs (matrix^T X = rhs with adjoint=True), reading only the lower (or
    upper) triangle of each [N, N] matrix."""
    a = _square(matrix, "matrix_triangular_solve")
    b = convert_to_tensor(rhs, dtype=a.dtype)

    def solve(m, r):
        m = np.tril(m) if lower else np.triu(m)
        if adjoint:
            m = np.swapaxes(m, -1, -2)
        return np.linalg.solve(m, r)

    return _numpy_op(solve, [a, b], [a.dtype], [b.shape.as_list()],
                     "SfTriangularSolve-%d%d" % (bool(lower), bool(adjoint)),
                     name or "MatrixTriangularSolve")[0]


def cholesky(input, name=None):  # noqa: A002
    """The lower-triangular L with L L^T = A for each symmetric positive definite matrix
    (NumPy raises, and the step fails naming the node, for one that is not)."""
    a = _square(input, "cholesky")
    return _numpy_op(np.linalg.cholesky, [a], [a.dtype], [a.shape.as_list()], "SfCholesky",
                     name or "Cholesky")[0]


def _lu_numpy(a):
    """Partial-pivoting LU of each [N, N] matrix (the largest magnitude in each column's
    remaining rows becomes the pivot, as LAPACK getrf and Eigen's PartialPivLU): the combined
    factors and the row permutation p with a[p] = L U."""
    a = np.array(a, copy=True)
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    perms = np.tile(np.arange(n, dtype=np.int64), (flat.shape[0], 1))
    for m, perm in zip(flat, perms):
        for k in range(n):
            pivot = k + int(np.argmax(np.abs(m[k:, k])))
            if pivot != k:
                m[[k, pivot]] = m[[pivot, k]]
                perm[[k, pivot]] = perm[[pivot, k]]
            if m[k, k] == 0:
                raise ValueError("lu: the input is not invertible")
            m[k + 1:, k] /= m[k, k]
            m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k, k + 1:])
    return flat.reshape(a.shape), perms.reshape(a.shape[:-1])


def lu(input, output_idx_type=dtypes.int32, name=None):  # noqa: A002
    """(lu, p): the LU decomposition with partial pivoting of each invertible [N, N] matrix,
    as TF's tf.linalg.lu: `lu` holds U on and above the diagonal and L's strict lower part
    (its diagonal is ones), and input[..., p, :] = L U. No gradient (nor in TF 1.15)."""
    a = _square(input, "lu")
    idx = dtypes.as_dtype(output_idx_type)
    dims = a.shape.as_list()
    factors, perm = _numpy_op(lambda x: _lu_numpy(x), [a], [a.dtype, idx], [dims, dims[:-1]],
                              "SfLu", name or "Lu")
    return factors, perm


def cholesky_solve(chol, rhs, name=None):
    """X with A X = rhs, given A's Cholesky factor `chol` (lower triangular, A = chol chol^T),
    as TF1's tf.cholesky_solve / tf.linalg.cholesky_solve: two triangular solves, so
    differentiable."""
    y = matrix_triangular_solve(chol, rhs, lower=True, adjoint=False)
    return ops.identity(matrix_triangular_solve(chol, y, lower=True, adjoint=True), name=name)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """Singular values s [..., K] (descending) and, with compute_uv, u [..., M, K'] and
    v [..., N, K'] with A = u diag(s) v^T, as TF1's tf.svd (returns s, u, v). Differentiable
    as TF1's."""
    a = convert_to_tensor(tensor)
    dims = a.shape.as_list() if a.shape.ndims is not None else None
    if dims is None or len(dims) < 2 or dims[-1] is None or dims[-2] is None:
        raise ValueError("svd takes [..., M, N] with M and N known, got %s" % (a.shape,))
    m, n = dims[-2], dims[-1]
    k = min(m, n)
    batch = dims[:-2]
    if not compute_uv:
        return _numpy_op(lambda x: np.linalg.svd(x, compute_uv=False), [a], [a.dtype],
                         [batch + [k]], "SfSvdValues", name or "Svd")[0]

    def run(x):
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
        return s, u, np.swapaxes(vh, -1, -2)

    ku, kv = (m, n) if full_matrices else (k, k)
    s, u, v = _numpy_op(run, [a], [a.dtype] * 3, [batch + [k], batch + [m, ku], batch + [n, kv]],
                        "SfSvd-%d" % bool(full_matrices), name or "Svd")
    return s, u, v


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """(q, r) with A = q r, q orthonormal columns, r upper triangular, as TF1's tf.qr.
    Differentiable as TF1's (square or tall matrices, reduced factors)."""
    a = convert_to_tensor(input)
    dims = a.shape.as_list() if a.shape.ndims is not None else None
    if dims is None or len(dims) < 2 or dims[-1] is None or dims[-2] is None:
        raise ValueError("qr takes [..., M, N] with M and N known, got %s" % (a.shape,))
    m, n = dims[-2], dims[-1]
    k = m if full_matrices else min(m, n)
    batch = dims[:-2]
    return tuple(_numpy_op(lambda x: tuple(np.linalg.qr(x, "complete" if full_matrices
                                                           else "reduced")),
                           [a], [a.dtype] * 2, [batch + [m, k], batch + [k, n]],
                           "SfQr-%d" % bool(full_matrices), name or "Qr"))


def matrix_solve_ls(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """The least-squares X minimizing ||matrix X - rhs||^2 + l2_regularizer ||X||^2 for each
    [M, N] matrix and [M, K] rhs (TF1's tf.matrix_solve_ls / tf.linalg.lstsq, its fast path:
    the normal equations, (A^T A + l2 I)^-1 A^T B when M >= N, A^T (A A^T + l2 I)^-1 B
    otherwise). Differentiable (through matmul and matrix_solve). fast=False is TF1's robust
    path: the minimum-norm least-squares solution (LAPACK's, here NumPy's lstsq), right for
    rank-deficient matrices too; l2_regularizer is ignored there and, as in TF1, it has no
    gradient."""
    a = convert_to_tensor(matrix)
    dims = a.shape.as_list() if a.shape.ndims is not None else None
    if dims is None or len(dims) < 2 or dims[-1] is None or dims[-2] is None:
        raise ValueError("matrix_solve_ls takes [..., M, N] matrices with M and N known, got %s"
                         % (a.shape,))
    if a.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError("matrix_solve_ls takes float32 or float64 matrices, got %s"
                        % a.dtype.name)
    b = convert_to_tensor(rhs, dtype=a.dtype)
    m, n = dims[-2], dims[-1]
    if not fast:
        def solve(x, y):
            if x.ndim == 2:
                return np.linalg.lstsq(x, y, rcond=None)[0]
            flat_x, flat_y = x.reshape((-1,) + x.shape[-2:]), y.reshape((-1,) + y.shape[-2:])
            out = np.stack([np.linalg.lstsq(p, q, rcond=None)[0]
                            for p, q in zip(flat_x, flat_y)])
            return out.reshape(x.shape[:-2] + out.shape[-2:])
        shape = b.shape.as_list()[:-2] + [n] + b.shape.as_list()[-1:] \
            if b.shape.ndims is not None else [None]
        return _numpy_op(solve, [a, b], [a.dtype], [shape], "SfLstsqRobust",
                         name or "MatrixSolveLs")[0]
    reg = ops.multiply(ops.cast(l2_regularizer, a.dtype),
                       ops.constant(np.eye(min(m, n)), dtype=a.dtype))
    if m >= n:
        gram = ops.add(ops.matmul(_t(a), a), reg)
        return matrix_solve(gram, ops.matmul(_t(a), b), name=name)
    gram = ops.add(ops.matmul(a, _t(a)), reg)
    return ops.matmul(_t(a), matrix_solve(gram, b), name=name)


def self_adjoint_eig(tensor, name=None):
    """(e, v): the eigenvalues (ascending) and eigenvectors (columns) of each symmetric
    [..., N, N] matrix, reading its lower triangle (TF1's tf.self_adjoint_eig /
    tf.linalg.eigh). Differentiable as TF1's (the gradient lands on the lower triangle)."""
    a = _square(tensor, "self_adjoint_eig")
    dims = a.shape.as_list()
    e, v = _numpy_op(lambda x: tuple(np.linalg.eigh(x, UPLO="L")), [a], [a.dtype, a.dtype],
                     [dims[:-1], dims], "SfSelfAdjointEig", name or "SelfAdjointEigV2")
    return e, v


def self_adjoint_eigvals(tensor, name=None):
    """The eigenvalues (ascending) of each symmetric matrix (tf.linalg.eigvalsh);
    differentiable."""
    a = _square(tensor, "self_adjoint_eigvals")
    return _numpy_op(lambda x: np.linalg.eigvalsh(x, UPLO="L"), [a], [a.dtype],
                     [a.shape.as_list()[:-1]], "SfSelfAdjointEigvals",
                     name or "SelfAdjointEigV2")[0]


# ---- matrix functions: expm, sqrtm, logm --------------------------------------------------------

# The [13/13] Pade coefficients of exp (Higham 2005, "The scaling and squaring method for the
# matrix exponential revisited"); exact for norms up to _THETA_13 after scaling by 2^-s.
_PADE_13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
            1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
            33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA_13 = 5.371920351148152


def _each_matrix(fn, a):
    """fn applied (in float64) to each [N, N] matrix of the [..., N, N] array a."""
    a = np.asarray(a)
    flat = a.reshape((-1,) + a.shape[-2:]).astype(np.float64)
    out = np.stack([fn(m) for m in flat]) if len(flat) else flat
    return out.reshape(a.shape)


def _expm_numpy(a):
    norm = np.abs(a).sum(axis=0).max() if a.size else 0.0
    s = max(0, int(np.ceil(np.log2(norm / _THETA_13)))) if norm > _THETA_13 else 0
    a = a / 2.0 ** s
    b, eye = _PADE_13, np.eye(len(a))
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
        + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for _ in range(s):
        r = r @ r
    return r


def _sqrtm_numpy(a):
    """The principal square root by the scaled Denman-Beavers iteration (a must have no
    eigenvalue on the closed negative real axis: otherwise NaN, or no real root)."""
    n = len(a)
    if n == 0:
        return a
    y, z = a.copy(), np.eye(n)
    for _ in range(100):
        det = abs(np.linalg.det(y) * np.linalg.det(z))
        gamma = det ** (-1.0 / (2 * n)) if 0 < det < np.inf else 1.0
        y_inv, z_inv = np.linalg.inv(y), np.linalg.inv(z)
        y_next = 0.5 * (gamma * y + z_inv / gamma)
        z = 0.5 * (gamma * z + y_inv / gamma)
        done = np.linalg.norm(y_next - y, 1) <= 1e-14 * np.linalg.norm(y_next, 1)
        y = y_next
        if done:
            break
    return y


def _logm_numpy(a):
    """The principal logarithm by inverse scaling and squaring: square roots until a is near
    I, then the series of 2 atanh((a - I)(a + I)^-1), times 2^k."""
    n = len(a)
    if n == 0:
        return a
    eye, k = np.eye(n), 0
    while np.linalg.norm(a - eye, 1) > 0.1 and k < 60:
        a = _sqrtm_numpy(a)
        k += 1
    z = np.linalg.solve((a + eye).T, (a - eye).T).T
    z2, term, total = z @ z, z, z.copy()
    for j in range(3, 60, 2):
        term = term @ z2
        total += term / j
        if np.abs(term).max() < 1e-18:
            break
    return 2.0 ** (k + 1) * total


def _slice_block(x, n):
    """x[..., :n, n:] of [..., 2n, 2n] matrices."""
    lead = x.shape.ndims - 2
    return ops.slice(x, [0] * lead + [0, n], [-1] * lead + [n, n])


@RegisterGradient("SfMatrixExponential")
def _expm_grad(op, grad):
    # The Frechet derivative of exp at A^T in the direction grad: the top right block of
    # exp([[A^T, grad], [0, A^T]]) (Mathias 1996), so the gradient is itself differentiable.
    a = op.inputs[0]
    grad = _shaped(grad, a.shape)
    at = _t(a)
    top = ops.concat([at, grad], -1)
    bottom = ops.concat([ops.zeros_like(at), at], -1)
    return [_slice_block(expm(ops.concat([top, bottom], -2)), a.shape.as_list()[-1])]


def _sylvester_numpy(y, g):
    """X with y^T X + X y^T = g, for each matrix of the batch (a Kronecker-product solve,
    O(N^6): meant for small matrices)."""
    def one(pair):
        yt, gm = pair
        n = len(yt)
        system = np.kron(yt, np.eye(n)) + np.kron(np.eye(n), yt.T)
        return np.linalg.solve(system, gm.reshape(-1)).reshape(n, n)
    y = np.asarray(y, np.float64)
    g = np.asarray(g, np.float64)
    flat_y = y.reshape((-1,) + y.shape[-2:])
    flat_g = g.reshape((-1,) + g.shape[-2:])
    out = [one((m.T, gm)) for m, gm in zip(flat_y, flat_g)]
    return np.stack(out).reshape(y.shape) if out else flat_g.reshape(y.shape)


@RegisterGradient("SfMatrixSquareRoot")
def _sqrtm_grad(op, grad):
    # Y = sqrtm(A): dA = Y dY + dY Y, so the gradient X solves Y^T X + X Y^T = grad (TF's
    # MatrixSquareRoot gradient). Not differentiable again (a NumPy solve).
    a = op.inputs[0]
    y = _out(op, 0, a.shape)
    grad = _shaped(grad, a.shape)
    x = py_func(lambda ym, gm: _sylvester_numpy(ym, gm).astype(a.dtype.as_numpy_dtype),
                [y, grad], a.dtype, stateful=False, name="MatrixSquareRootGrad")
    return [_shaped(x, a.shape)]


@RegisterGradient("SfMatrixLogarithm")
def _logm_grad(op, grad):
    raise NotImplementedError("logm has no gradient (nor in TF 1.15)")


def expm(input, name=None):  # noqa: A002
    """The matrix exponential of each [..., N, N] matrix, as TF 1.15's tf.linalg.expm (scaling
    and squaring with the [13/13] Pade approximant, in float64). Differentiable (again and
    again): the gradient is an expm of a [2N, 2N] block matrix."""
    a = _square(input, "expm")
    return _numpy_op(lambda x: _each_matrix(_expm_numpy, x), [a], [a.dtype],
                     [a.shape.as_list()], "SfMatrixExponential", name or "MatrixExponential")[0]


def matrix_square_root(input, name=None):  # noqa: A002
    """The principal square root of each [..., N, N] real matrix (no eigenvalue on the closed
    negative real axis; else NaN), as TF's tf.linalg.sqrtm / tf.matrix_square_root: the
    Denman-Beavers iteration in float64. Differentiable once (TF's Sylvester-equation
    gradient, an O(N^6) NumPy solve), not twice."""
    a = _square(input, "sqrtm")
    return _numpy_op(lambda x: _each_matrix(_sqrtm_numpy, x), [a], [a.dtype],
                     [a.shape.as_list()], "SfMatrixSquareRoot", name or "MatrixSquareRoot")[0]


def logm(input, name=None):  # noqa: A002
    """The principal logarithm of each [..., N, N] real matrix that has one (no eigenvalue
    on the closed negative real axis; else NaN), as tf.linalg.logm: inverse scaling and
    squaring in float64. TF's logm takes complex matrices only (shardflow has no complex
    types, so this takes real ones); no gradient, as TF's."""
    a = _square(input, "logm")
    return _numpy_op(lambda x: _each_matrix(_logm_numpy, x), [a], [a.dtype],
                     [a.shape.as_list()], "SfMatrixLogarithm", name or "MatrixLogarithm")[0]


# lu is tf.linalg.lu only (namespaces.py finds it here), as in TF 1.15.
__all__ = ["cholesky", "cholesky_solve", "log_matrix_determinant", "logdet",
           "matrix_determinant", "matrix_inverse", "matrix_solve", "matrix_solve_ls",
           "matrix_square_root",
           "matrix_triangular_solve", "qr", "self_adjoint_eig", "self_adjoint_eigvals", "svd"]
