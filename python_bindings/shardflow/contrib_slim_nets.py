"""tf.contrib.slim.nets.vgg and .resnet_v1: networks of TF-slim's model zoo (vgg_a, vgg_16,
vgg_19, vgg_arg_scope; resnet_v1_50/101/152/200, resnet_arg_scope), built from slim's layers
with its variable names, so that a TF1 program that fine-tunes VGG-16 or ResNet-50 from slim's
checkpoint (``vgg_16/conv1/conv1_1/weights``, ..., ``resnet_v1_50/block1/unit_1/
bottleneck_v1/conv1/BatchNorm/gamma``) builds the same variables:

    slim = sf.contrib.slim
    vgg = slim.nets.vgg
    with slim.arg_scope(vgg.vgg_arg_scope()):
        logits, end_points = vgg.vgg_16(images, num_classes=10, is_training=True)
    restore = slim.assign_from_checkpoint_fn("vgg_16.ckpt", slim.get_variables_to_restore(
        exclude=["vgg_16/fc8"]))

The fully connected layers are convolutions (fc6: 7x7, VALID by default, so 224x224 inputs
give 1x1 maps; fc_conv_padding="SAME" keeps the map), end_points maps each layer's scope
('vgg_16/conv1/conv1_1', ..., 'vgg_16/fc8') to its output. Other nets of the zoo (resnet_v2,
inception, ...) and atrous ResNets (output_stride) are not carried.
"""

import collections
import types

from shardflow import nn, ops
from shardflow.contrib_framework import arg_scope
from shardflow.contrib_layers import (conv2d, dropout, fully_connected, l2_regularizer,
                                      max_pool2d)
from shardflow.variable_scope import variable_scope, zeros_initializer

# Convolutions per block: vgg_a (VGG-11), vgg_16, vgg_19; blocks of 64, 128, 256, 512, 512.
_BLOCKS = {"vgg_a": (1, 1, 2, 2, 2), "vgg_16": (2, 2, 3, 3, 3), "vgg_19": (2, 2, 4, 4, 4)}
_WIDTHS = (64, 128, 256, 512, 512)


def vgg_arg_scope(weight_decay=0.0005):
    """ReLU convolutions and fully connected layers with L2 weight decay and zero biases;
    SAME padding for the convolutions."""
    with arg_scope([conv2d, fully_connected], activation_fn=nn.relu,
                   weights_regularizer=l2_regularizer(weight_decay),
                   biases_initializer=zeros_initializer()):
        with arg_scope([conv2d], padding="SAME") as scope:
            return scope


def _vgg(kind, inputs, num_classes, is_training, dropout_keep_prob, spatial_squeeze, scope,
         fc_conv_padding, global_pool):
    end_points = collections.OrderedDict()
    with variable_scope(scope, default_name=kind, values=[inputs]) as sc:
        prefix = sc.name
        net = inputs
        for block, (count, width) in enumerate(zip(_BLOCKS[kind], _WIDTHS), start=1):
            with variable_scope("conv%d" % block):
                for k in range(1, count + 1):
                    net = conv2d(net, width, [3, 3], scope="conv%d_%d" % (block, k))
                    end_points["%s/conv%d/conv%d_%d" % (prefix, block, block, k)] = net
            net = max_pool2d(net, [2, 2], scope="pool%d" % block)
            end_points["%s/pool%d" % (prefix, block)] = net
        net = conv2d(net, 4096, [7, 7], padding=fc_conv_padding, scope="fc6")
        end_points[prefix + "/fc6"] = net
        net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout6")
        net = conv2d(net, 4096, [1, 1], scope="fc7")
        end_points[prefix + "/fc7"] = net
        if global_pool:
            net = ops.reduce_mean(net, [1, 2], keepdims=True, name="global_pool")
            end_points["global_pool"] = net
        if num_classes:
            net = dropout(net, dropout_keep_prob, is_training=is_training, scope="dropout7")
            net = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                         scope="fc8")
            if spatial_squeeze:
                net = ops.squeeze(net, [1, 2], name="fc8/squeezed")
            end_points[prefix + "/fc8"] = net
    return net, end_points


def _make(kind):
    def net(inputs, num_classes=1000, is_training=True, dropout_keep_prob=0.5,
            spatial_squeeze=True, scope=kind, fc_conv_padding="VALID", global_pool=False):
        return _vgg(kind, inputs, num_classes, is_training, dropout_keep_prob,
                    spatial_squeeze, scope, fc_conv_padding, global_pool)
    net.__name__ = kind
    net.__doc__ = ("TF-slim's %s: (logits [batch, num_classes] (spatially squeezed), "
                   "end_points). num_classes=0 or None returns fc7's features." % kind)
    net.default_image_size = 224
    return net


vgg_a = _make("vgg_a")
vgg_16 = _make("vgg_16")
vgg_19 = _make("vgg_19")
vgg_d, vgg_e = vgg_16, vgg_19


def _module(name, doc, names):
    """A module slim.nets.<name> holding these functions of this file."""
    module = types.ModuleType("shardflow.contrib_slim.nets." + name, doc)
    for n in names:
        setattr(module, n, globals()[n])
    module.__all__ = sorted(names)
    return module


vgg = _module("vgg", __doc__, ["vgg_a", "vgg_16", "vgg_19", "vgg_d", "vgg_e", "vgg_arg_scope"])

# ---- resnet_v1 ----------------------------------------------------------------------------
# The bottleneck ResNets of "Deep Residual Learning" (He et al. 2015) as TF-slim lays them out:
# conv1 (7x7/2, padded explicitly as slim's conv2d_same), pool1 (3x3/2 SAME), then blocks of
# bottleneck units (1x1, 3x3, 1x1 convolutions with batch norm; the shortcut a 1x1
# convolution where the depth changes, else a subsampling of the input) whose last unit
# carries the block's stride, a global average pool and 1x1 logits. Variable names follow
# resnet_v1_50/block1/unit_1/bottleneck_v1/conv1/weights, .../BatchNorm/gamma.

_RESNET_UNITS = {"resnet_v1_50": (3, 4, 6, 3), "resnet_v1_101": (3, 4, 23, 3),
                 "resnet_v1_152": (3, 8, 36, 3), "resnet_v1_200": (3, 24, 36, 3)}


def resnet_arg_scope(weight_decay=0.0001, batch_norm_decay=0.997, batch_norm_epsilon=1e-5,
                     batch_norm_scale=True, activation_fn=nn.relu, use_batch_norm=True):
    """Convolutions with He initialisation, L2 weight decay, ReLU and batch norm (its updates
    in UPDATE_OPS); SAME max pooling."""
    from shardflow.contrib_layers import batch_norm, variance_scaling_initializer
    from shardflow.framework import GraphKeys
    params = {"decay": batch_norm_decay, "epsilon": batch_norm_epsilon,
              "scale": batch_norm_scale, "updates_collections": GraphKeys.UPDATE_OPS}
    with arg_scope([conv2d], weights_regularizer=l2_regularizer(weight_decay),
                   weights_initializer=variance_scaling_initializer(),
                   activation_fn=activation_fn,
                   normalizer_fn=batch_norm if use_batch_norm else None,
                   normalizer_params=params):
        with arg_scope([batch_norm], **params):
            with arg_scope([max_pool2d], padding="SAME") as scope:
                return scope


def _conv2d_same(inputs, depth, kernel, stride, scope):
    """A convolution whose output is the input's size divided by the stride whatever the
    input's parity: padded explicitly, then VALID (slim's resnet_utils.conv2d_same)."""
    if stride == 1:
        return conv2d(inputs, depth, kernel, stride=1, padding="SAME", scope=scope)
    from shardflow.array_ops import pad
    total = kernel - 1
    begin = total // 2
    inputs = pad(inputs, [[0, 0], [begin, total - begin], [begin, total - begin], [0, 0]])
    return conv2d(inputs, depth, kernel, stride=stride, padding="VALID", scope=scope)


def _bottleneck(inputs, depth, depth_bottleneck, stride, end_points, prefix):
    with variable_scope("bottleneck_v1") as sc:
        depth_in = inputs.shape.as_list()[-1]
        if depth == depth_in:
            shortcut = inputs if stride == 1 else max_pool2d(inputs, [1, 1], stride=stride,
                                                             scope="shortcut")
        else:
            shortcut = conv2d(inputs, depth, [1, 1], stride=stride, activation_fn=None,
                              scope="shortcut")
        residual = conv2d(inputs, depth_bottleneck, [1, 1], stride=1, scope="conv1")
        residual = _conv2d_same(residual, depth_bottleneck, 3, stride, "conv2")
        residual = conv2d(residual, depth, [1, 1], stride=1, activation_fn=None, scope="conv3")
        out = nn.relu(ops.add(shortcut, residual))
        end_points[sc.name] = out
        return out


def _resnet_v1(kind, inputs, num_classes, is_training, global_pool, spatial_squeeze, scope):
    from shardflow.contrib_layers import batch_norm
    end_points = collections.OrderedDict()
    with variable_scope(scope, default_name=kind, values=[inputs]) as sc:
        prefix = sc.name
        with arg_scope([batch_norm], is_training=is_training):
            net = _conv2d_same(inputs, 64, 7, 2, "conv1")
            end_points[prefix + "/conv1"] = net
            net = max_pool2d(net, [3, 3], stride=2, scope="pool1")
            for block, (units, base) in enumerate(zip(_RESNET_UNITS[kind], (64, 128, 256, 512)),
                                                  start=1):
                with variable_scope("block%d" % block):
                    for unit in range(1, units + 1):
                        stride = 2 if unit == units and block < 4 else 1
                        with variable_scope("unit_%d" % unit):
                            net = _bottleneck(net, base * 4, base, stride, end_points, prefix)
                end_points["%s/block%d" % (prefix, block)] = net
            if global_pool:
                net = ops.reduce_mean(net, [1, 2], keepdims=True, name="pool5")
                end_points["global_pool"] = net
            if num_classes:
                net = conv2d(net, num_classes, [1, 1], activation_fn=None, normalizer_fn=None,
                             scope="logits")
                end_points[prefix + "/logits"] = net
                if spatial_squeeze:
                    net = ops.squeeze(net, [1, 2], name="SpatialSqueeze")
                    end_points[prefix + "/spatial_squeeze"] = net
                end_points["predictions"] = nn.softmax(net, name="predictions")
    return net, end_points


def _make_resnet(kind):
    def net(inputs, num_classes=None, is_training=True, global_pool=True, output_stride=None,
            spatial_squeeze=True, reuse=None, scope=kind):
        if output_stride is not None:
            raise NotImplementedError("%s(output_stride=%r): atrous (dilated) ResNets are not "
                                      "supported" % (kind, output_stride))
        if reuse:
            with variable_scope(scope, reuse=True) as sc:
                return _resnet_v1(kind, inputs, num_classes, is_training, global_pool,
                                  spatial_squeeze, sc)
        return _resnet_v1(kind, inputs, num_classes, is_training, global_pool,
                          spatial_squeeze, scope)
    net.__name__ = kind
    net.__doc__ = ("TF-slim's %s: (logits, end_points); num_classes=None returns the pooled "
                   "features [batch, 1, 1, 2048]." % kind)
    net.default_image_size = 224
    return net


resnet_v1_50 = _make_resnet("resnet_v1_50")
resnet_v1_101 = _make_resnet("resnet_v1_101")
resnet_v1_152 = _make_resnet("resnet_v1_152")
resnet_v1_200 = _make_resnet("resnet_v1_200")

resnet_v1 = _module("resnet_v1", "TF-slim's resnet_v1_50/101/152/200 and resnet_arg_scope.",
                    ["resnet_v1_50", "resnet_v1_101", "resnet_v1_152", "resnet_v1_200",
                     "resnet_arg_scope"])

nets = types.ModuleType("shardflow.contrib_slim.nets", "slim.nets: vgg and resnet_v1.")
nets.vgg = vgg
nets.resnet_v1 = resnet_v1
nets.__all__ = ["resnet_v1", "vgg"]
