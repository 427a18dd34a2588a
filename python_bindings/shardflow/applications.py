"""Standard networks built with shardflow.layers: ResNet-18, ResNet-50 and a ResNet-8 for small
images (the same networks as the C++ ops/resnet.h and ``shardflow train --model``).

Example::

    net = sf.applications.resnet50(classes=1000)
    logits = net(images, training=True)          # images [batch, 224, 224, 3], NHWC
    eval_logits = net(images)                    # shares the variables; moving averages
    loss = sf.reduce_mean(sf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    with sf.control_dependencies(net.updates):   # batch norm's moving averages
        train = sf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)

The blocks follow torchvision's models (ResNet v1.5: a bottleneck's stride on its 3x3
convolution; a projection shortcut where the shape changes), with SAME padding, convolutions
without bias before each batch norm (momentum 0.9, epsilon 1e-5, as torchvision's defaults),
He-normal filters, global average pooling and a dense layer.
"""

from shardflow import nn, ops
from shardflow.layers import (BatchNormalization, Conv2D, Dense, GlobalAveragePooling2D, Layer)
from shardflow.variable_scope import variable_scope
from shardflow.variables import initializers


class _ConvNorm:
    """A convolution without bias and its batch norm."""

    def __init__(self, filters, kernel, stride, seed, name):
        self.conv = Conv2D(filters, kernel, strides=stride, padding="SAME", use_bias=False,
                           kernel_initializer=initializers.he_normal(seed), name=name)
        self.norm = BatchNormalization(momentum=0.9, epsilon=1e-5,
                                       name="bn" + name[len("conv"):])

    def __call__(self, x, training):
        return self.norm(self.conv(x), training=training)


class ResNet(Layer):
    """A residual network: `blocks` per stage, bottleneck (1x1, 3x3, 1x1 with 4x channels) or
    basic (3x3, 3x3) blocks, `width` channels in the first stage (doubled by each later one).
    `imagenet_stem`: a 7x7/2 convolution and a 3x3/2 max-pool; else one 3x3/1 convolution."""

    _default_name = "resnet"

    def __init__(self, blocks, bottleneck, width=64, classes=1000, imagenet_stem=True, seed=1,
                 name=None, device=None):
        super().__init__(name, device)
        if not blocks or any(int(b) < 1 for b in blocks):
            raise ValueError("ResNet needs at least one stage and one block per stage, got %r"
                             % (blocks,))
        self.blocks = [int(b) for b in blocks]
        self.bottleneck = bottleneck
        self.width = int(width)
        self.classes = int(classes)
        self.imagenet_stem = imagenet_stem
        self.seed = seed
        self.updates = []

    def build(self, input_shape):
        seed = self.seed
        self._stem = _ConvNorm(self.width, 7 if self.imagenet_stem else 3,
                               2 if self.imagenet_stem else 1, seed, "conv1")
        seed += 1
        self._stages = []
        expansion = 4 if self.bottleneck else 1
        in_channels = self.width
        for stage, count in enumerate(self.blocks):
            width = self.width << stage
            out = width * expansion
            blocks = []
            for b in range(count):
                stride = 2 if stage > 0 and b == 0 else 1
                if self.bottleneck:
                    spec = [(width, 1, 1), (width, 3, stride), (out, 1, 1)]
                else:
                    spec = [(width, 3, stride), (out, 3, 1)]
                convs = []
                for i, (filters, kernel, s) in enumerate(spec):
                    convs.append(_ConvNorm(filters, kernel, s, seed, "conv%d" % (i + 1)))
                    seed += 1
                projection = None
                if stride != 1 or in_channels != out:
                    projection = _ConvNorm(out, 1, stride, seed, "conv_shortcut")
                    seed += 1
                blocks.append(("stage%d/block%d" % (stage + 1, b + 1), convs, projection))
                in_channels = out
            self._stages.append(blocks)
        self._head = Dense(self.classes, kernel_initializer=initializers.glorot_uniform(seed),
                           name="logits")

    def call(self, x, training=False):
        h = nn.relu(self._stem(x, training))
        if self.imagenet_stem:
            h = nn.max_pool(h, 3, 2, "SAME")
        for blocks in self._stages:
            for name, convs, projection in blocks:
                stage, block = name.split("/")
                # Variable scopes (which open name scopes of the same names): the blocks'
                # layers share names (conv1, bn1, ...), told apart by their block's scope.
                with variable_scope(stage), variable_scope(block):
                    y = h
                    for i, part in enumerate(convs):
                        y = part(y, training)
                        if i + 1 < len(convs):
                            y = nn.relu(y)
                    shortcut = projection(h, training) if projection is not None else h
                    h = nn.relu(ops.add(y, shortcut))
        logits = self._head(GlobalAveragePooling2D(name="pool")(h))
        self.updates = [u for n in self._norms() for u in n.updates]
        return logits

    def _parts_list(self):
        parts = [self._stem]
        for blocks in self._stages:
            for _, convs, projection in blocks:
                parts += convs + ([projection] if projection is not None else [])
        return parts

    def _norms(self):
        return [p.norm for p in self._parts_list()]

    @property
    def variables(self):
        if not self._built:
            return []
        layers = [layer for p in self._parts_list() for layer in (p.conv, p.norm)]
        return [v for layer in layers + [self._head] for v in layer.variables]

    @variables.setter
    def variables(self, value):
        pass  # the parts own the variables


def resnet18(classes=1000, seed=1, name="resnet18", device=None):
    """torchvision's ResNet-18 (basic blocks [2, 2, 2, 2]) for 224x224 images."""
    return ResNet([2, 2, 2, 2], bottleneck=False, classes=classes, seed=seed, name=name,
                  device=device)


def resnet50(classes=1000, seed=1, name="resnet50", device=None):
    """torchvision's ResNet-50 (bottleneck blocks [3, 4, 6, 3]) for 224x224 images."""
    return ResNet([3, 4, 6, 3], bottleneck=True, classes=classes, seed=seed, name=name,
                  device=device)


def small_resnet(classes=10, width=16, seed=1, name="resnet", device=None):
    """ResNet-8 for small images such as Fashion-MNIST's 28x28: a 3x3 stem and three stages of
    one basic block (16, 32, 64 channels)."""
    return ResNet([1, 1, 1], bottleneck=False, width=width, classes=classes,
                  imagenet_stem=False, seed=seed, name=name, device=device)
