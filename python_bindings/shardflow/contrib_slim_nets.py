"""tf.contrib.slim.nets.vgg: the VGG networks of TF-slim's model zoo (vgg_a, vgg_16, vgg_19 and
vgg_arg_scope), built from slim's layers with its variable names, so that a TF1 program that
fine-tunes VGG-16 from slim's checkpoint (``vgg_16/conv1/conv1_1/weights``, ...,
``vgg_16/fc8/biases``) builds the same variables:

    slim = sf.contrib.slim
    vgg = slim.nets.vgg
    with slim.arg_scope(vgg.vgg_arg_scope()):
        logits, end_points = vgg.vgg_16(images, num_classes=10, is_training=True)
    restore = slim.assign_from_checkpoint_fn("vgg_16.ckpt", slim.get_variables_to_restore(
        exclude=["vgg_16/fc8"]))

The fully connected layers are convolutions (fc6: 7x7, VALID by default, so 224x224 inputs
give 1x1 maps; fc_conv_padding="SAME" keeps the map), end_points maps each layer's scope
('vgg_16/conv1/conv1_1', ..., 'vgg_16/fc8') to its output. Other nets of the zoo (resnet,
inception, ...) are not carried.
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

vgg = types.ModuleType("shardflow.contrib_slim.nets.vgg", __doc__)
for _name in ("vgg_a", "vgg_16", "vgg_19", "vgg_d", "vgg_e", "vgg_arg_scope"):
    setattr(vgg, _name, globals()[_name])
vgg.__all__ = ["vgg_16", "vgg_19", "vgg_a", "vgg_arg_scope", "vgg_d", "vgg_e"]

nets = types.ModuleType("shardflow.contrib_slim.nets", "slim.nets: vgg only.")
nets.vgg = vgg
nets.__all__ = ["vgg"]
