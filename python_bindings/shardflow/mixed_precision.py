"""TF1's switch for the mixed-precision graph rewrite: tf.train.experimental.
enable_mixed_precision_graph_rewrite (TF 1.14, 1.15) and tf.compat.v1.mixed_precision's, which
TF 2 keeps for graph code::

    opt = sf.train.AdamOptimizer(1e-3)
    opt = sf.train.experimental.enable_mixed_precision_graph_rewrite(opt)
    train_op = opt.minimize(loss)        # sessions made from now on run the rewrite

TF's rewrite puts float16 on GPUs and so wraps the optimizer in loss scaling. shardflow's is
bfloat16 on the CPU (the graph optimizer's auto_mixed_precision_onednn_bfloat16,
docs/optimizer.md: matrix products and convolutions read bfloat16, master weights, updates and
reductions stay fp32): bfloat16 keeps fp32's exponent, so gradients need no scaling and the
optimizer comes back unchanged; loss_scale is checked and accepted. A session whose
ConfigProto sets the pass OFF keeps it off.
"""
import numbers

from shardflow import session as _session

__all__ = ["disable_mixed_precision_graph_rewrite", "enable_mixed_precision_graph_rewrite"]


def _check_loss_scale(loss_scale):
    if loss_scale is None or loss_scale == "dynamic":
        return
    if isinstance(loss_scale, numbers.Real) and not isinstance(loss_scale, bool):
        if loss_scale > 0:
            return
        raise ValueError("loss_scale must be positive, got %r" % (loss_scale,))
    if hasattr(loss_scale, "__call__") or type(loss_scale).__name__.endswith("LossScale"):
        return  # a LossScale object: nothing to scale for bfloat16
    raise ValueError("loss_scale is 'dynamic', a positive number or a LossScale, not %r"
                     % (loss_scale,))


def enable_mixed_precision_graph_rewrite(opt, loss_scale="dynamic"):
    """Turns the bfloat16 mixed-precision rewrite on for the sessions made from now on and
    returns `opt` (a sf.train.Optimizer) unchanged; see the module's docstring."""
    from shardflow.train import Optimizer
    if not isinstance(opt, Optimizer):
        raise ValueError("enable_mixed_precision_graph_rewrite: opt must be a "
                         "sf.train.Optimizer (e.g. sf.train.AdamOptimizer(1e-3)), got %r"
                         % (opt,))
    _check_loss_scale(loss_scale)
    _session.set_mixed_precision_rewrite(True)
    return opt


def disable_mixed_precision_graph_rewrite():
    """Sessions made from now on run without the mixed-precision rewrite (unless their
    ConfigProto sets it ON)."""
    _session.set_mixed_precision_rewrite(False)
