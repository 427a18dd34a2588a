"""tf.keras.preprocessing.image, as TF 1.15's (keras_preprocessing 1.1): ImageDataGenerator,
which augments and standardises batches of images in NumPy before they reach the graph, and
its flow() iterator, a keras.utils.Sequence that model.fit and fit_generator train on.

Supported: rescale, preprocessing_function, samplewise_center / std_normalization,
featurewise_center / std_normalization (with fit()), rotation_range, width_shift_range,
height_shift_range, shear_range, zoom_range, fill_mode ('nearest', 'constant' with cval,
'reflect', 'wrap'), interpolation_order (1 bilinear, 0 nearest), channel_shift_range,
horizontal_flip, vertical_flip, data_format; and the functions apply_affine_transform,
random_rotation, random_shift, random_shear, random_zoom, apply_channel_shift and flip_axis.
Rotations, shifts, shears and zooms are Keras's affine transform about the centre TF 1.15
uses (transform_matrix_offset_center), resampled in NumPy the way
scipy.ndimage.affine_transform (which Keras calls) samples, so no scipy is needed. Images in
files: load_img, img_to_array, array_to_img, save_img and flow_from_directory (with Pillow;
image_files.py). validation_split with flow's and flow_from_directory's subset='training' /
'validation' (the first fraction of the arrays, or of each class's files, is validation, as
Keras's). Not supported (an error says so): brightness_range, zca_whitening (scipy.linalg) and
flow_from_dataframe.

Example::

    gen = ImageDataGenerator(rescale=1 / 255.0, rotation_range=15, zoom_range=0.1,
                             width_shift_range=0.1, horizontal_flip=True)
    model.fit_generator(gen.flow(x_train, y_train, batch_size=32), epochs=5)
"""

import numbers
import threading
import warnings

import numpy as np

from shardflow.keras import backend as K
from shardflow.keras.utils import Sequence


def flip_axis(x, axis):
    """x reversed along `axis`."""
    return np.flip(np.asarray(x), axis)


_FILL_MODES = ("constant", "nearest", "reflect", "wrap")


def transform_matrix_offset_center(matrix, x, y):
    """`matrix` (3 x 3, homogeneous, on (row, column) coordinates) made to act about the point
    (x / 2 + 0.5, y / 2 + 0.5) of an x-by-y image, the centre Keras 2.2.4 and tf.keras 1.15
    use. It is one pixel down and right of the true centre ((x - 1) / 2, (y - 1) / 2), which
    later keras_preprocessing releases use; kept so that transforms match TF 1.15's."""
    o_x, o_y = float(x) / 2 + 0.5, float(y) / 2 + 0.5
    offset = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    reset = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    return offset @ matrix @ reset


def _fold(coord, n, mode):
    """Input coordinates past the edges of an axis of n pixels brought into [0, n - 1] as
    scipy.ndimage's boundary modes (which Keras passes fill_mode to) do: 'nearest' (and
    'constant', masked by the caller) clamp; 'reflect' mirrors about the outer pixel edges
    (d c b a | a b c d | d c b a); 'wrap' repeats the image with its last and first pixels
    overlapping (period n - 1; a negative whole multiple of it lands on the last pixel)."""
    if mode == "reflect":
        period = 2.0 * n
        coord = np.mod(coord + 0.5, period) - 0.5
        coord = np.where(coord > n - 0.5, period - 1 - coord, coord)
    elif mode == "wrap" and n > 1:
        span = n - 1.0
        coord = np.where(coord < 0, coord + span * (np.floor(-coord / span) + 1),
                         np.where(coord > span, coord - span * np.floor(coord / span), coord))
    return np.clip(coord, 0, n - 1)


def _resample(channels, matrix, offset, order, mode, cval):
    """Every channel of `channels` [C, H, W] sampled at input = matrix @ output + offset (the
    mapping of scipy.ndimage.affine_transform): bilinear (order 1) or the pixel at
    floor(coordinate + 0.5) (order 0). Integer images are rounded half away from zero and
    clipped to their type's range, as scipy writes them."""
    _, h, w = channels.shape
    rows, cols = np.meshgrid(np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64),
                             indexing="ij")
    r = matrix[0, 0] * rows + matrix[0, 1] * cols + offset[0]
    c = matrix[1, 0] * rows + matrix[1, 1] * cols + offset[1]
    outside = None
    if mode == "constant":
        eps = 1e-9  # coordinates a rounding error past the edge (cos 90 degrees) still inside
        outside = (r < -eps) | (r > h - 1 + eps) | (c < -eps) | (c > w - 1 + eps)
    r, c = _fold(r, h, mode), _fold(c, w, mode)
    if order == 0:
        out = channels[:, np.floor(r + 0.5).astype(np.int64), np.floor(c + 0.5).astype(np.int64)]
    else:
        r0, c0 = np.floor(r), np.floor(c)
        fr, fc = (r - r0)[None], (c - c0)[None]
        r0, c0 = r0.astype(np.int64), c0.astype(np.int64)
        r1, c1 = np.minimum(r0 + 1, h - 1), np.minimum(c0 + 1, w - 1)
        out = (channels[:, r0, c0] * (1 - fr) * (1 - fc) + channels[:, r1, c0] * fr * (1 - fc)
               + channels[:, r0, c1] * (1 - fr) * fc + channels[:, r1, c1] * fr * fc)
    if outside is not None:
        out = np.where(outside[None], cval, out)
    if np.issubdtype(channels.dtype, np.integer):
        info = np.iinfo(channels.dtype)
        out = np.clip(np.trunc(out + np.where(out > 0, 0.5, -0.5)), info.min, info.max)
    return out.astype(channels.dtype, copy=False)


def apply_affine_transform(x, theta=0, tx=0, ty=0, shear=0, zx=1, zy=1, row_axis=0,
                           col_axis=1, channel_axis=2, fill_mode="nearest", cval=0.0,
                           order=1):
    """One image (rank 3) transformed as Keras 2.2.4 / tf.keras 1.15 do, in NumPy instead of
    scipy.ndimage: the product rotation(theta) @ shift(tx, ty) @ shear(shear) @ zoom(zx, zy)
    (angles in degrees), moved to the centre of transform_matrix_offset_center, maps every
    output pixel to the input point it is sampled at (scipy.ndimage.affine_transform's
    input = matrix @ output + offset). So a positive theta turns the picture clockwise (row 0
    at the top), tx / ty move its content up / left by that many rows / columns, and a zoom
    below 1 magnifies. The matrix acts on the two non-channel axes in array order, centred
    with the sizes of row_axis and col_axis, as Keras's. order 1 interpolates bilinearly, 0
    takes the nearest pixel; fill_mode 'constant' (cval), 'nearest', 'reflect' or 'wrap'
    (scipy.ndimage's meanings) fills points outside the image. With no transform, x itself."""
    if fill_mode not in _FILL_MODES:
        raise ValueError("apply_affine_transform: fill_mode must be one of %s, not %r"
                         % (", ".join(_FILL_MODES), fill_mode))
    if order not in (0, 1):
        raise ValueError("apply_affine_transform: order must be 0 (nearest) or 1 (bilinear), "
                         "not %r" % (order,))
    matrices = []
    if theta != 0:
        t = np.deg2rad(theta)
        matrices.append([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
    if tx != 0 or ty != 0:
        matrices.append([[1, 0, tx], [0, 1, ty], [0, 0, 1]])
    if shear != 0:
        sh = np.deg2rad(shear)
        matrices.append([[1, -np.sin(sh), 0], [0, np.cos(sh), 0], [0, 0, 1]])
    if zx != 1 or zy != 1:
        matrices.append([[zx, 0, 0], [0, zy, 0], [0, 0, 1]])
    if not matrices:
        return x
    x = np.asarray(x)
    if x.ndim != 3:
        raise ValueError("apply_affine_transform: x must be one image of rank 3 (rows, columns "
                         "and channels), got shape %s" % (x.shape,))
    matrix = np.eye(3)
    for m in matrices:
        matrix = matrix @ np.array(m, dtype=np.float64)
    matrix = transform_matrix_offset_center(matrix, x.shape[row_axis], x.shape[col_axis])
    out = _resample(np.moveaxis(x, channel_axis, 0), matrix[:2, :2], matrix[:2, 2], order,
                    fill_mode, cval)
    return np.moveaxis(out, 0, channel_axis)


def _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval, order, **params):
    return apply_affine_transform(x, row_axis=row_axis, col_axis=col_axis,
                                  channel_axis=channel_axis, fill_mode=fill_mode, cval=cval,
                                  order=order, **params)


def random_rotation(x, rg, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest",
                    cval=0.0, interpolation_order=1):
    """x (one image, channels first by default) rotated by a uniform random angle in
    [-rg, rg] degrees (see apply_affine_transform)."""
    return _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval,
                          interpolation_order, theta=np.random.uniform(-rg, rg))


def random_shift(x, wrg, hrg, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest",
                 cval=0.0, interpolation_order=1):
    """x shifted by uniform random fractions in [-hrg, hrg] of its height and [-wrg, wrg] of
    its width."""
    tx = np.random.uniform(-hrg, hrg) * x.shape[row_axis]
    ty = np.random.uniform(-wrg, wrg) * x.shape[col_axis]
    return _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval,
                          interpolation_order, tx=tx, ty=ty)


def random_shear(x, intensity, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest",
                 cval=0.0, interpolation_order=1):
    """x sheared by a uniform random angle in [-intensity, intensity] degrees."""
    return _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval,
                          interpolation_order, shear=np.random.uniform(-intensity, intensity))


def _zoom_range(zoom_range):
    """ImageDataGenerator's zoom_range as Keras reads it: a number z means [1 - z, 1 + z],
    a list, tuple or 1-D array of two numbers is [low, high]; anything else is an error."""
    if isinstance(zoom_range, numbers.Real):
        return [1 - zoom_range, 1 + zoom_range]
    pair = isinstance(zoom_range, (list, tuple)) or (isinstance(zoom_range, np.ndarray)
                                                     and zoom_range.ndim == 1)
    if pair and len(zoom_range) == 2 and all(isinstance(z, numbers.Real) for z in zoom_range):
        return [zoom_range[0], zoom_range[1]]
    raise ValueError("`zoom_range` should be a float or a tuple or list of two floats. "
                     "Received: %s" % (zoom_range,))


def _draw_zoom(zoom_range):
    """(zx, zy) drawn independently from [low, high], or (1, 1) without a draw when both
    bounds are 1, as Keras does (so the random stream is the same as with no zoom)."""
    if zoom_range[0] == 1 and zoom_range[1] == 1:
        return 1, 1
    zx, zy = np.random.uniform(zoom_range[0], zoom_range[1], 2)
    return zx, zy


def random_zoom(x, zoom_range, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest",
                cval=0.0, interpolation_order=1):
    """x zoomed by factors drawn uniformly from zoom_range (two numbers), rows and columns
    independently; a factor below 1 magnifies."""
    if isinstance(zoom_range, str) or np.ndim(zoom_range) != 1 or len(zoom_range) != 2:
        raise ValueError("`zoom_range` should be a tuple or list of two floats. Received: %s"
                         % (zoom_range,))
    zx, zy = _draw_zoom(zoom_range)
    return _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval,
                          interpolation_order, zx=zx, zy=zy)


def apply_channel_shift(x, intensity, channel_axis=0):
    """Adds `intensity` to every channel, clipped to the image's [min, max]."""
    x = np.rollaxis(x, channel_axis, 0)
    min_x, max_x = np.min(x), np.max(x)
    x = np.stack([np.clip(c + intensity, min_x, max_x) for c in x], axis=0)
    return np.rollaxis(x, 0, channel_axis + 1)


class ImageDataGenerator:
    """Random augmentation and standardisation of batches of rank-4 images (channels last by
    default), as Keras's. Every image gets a rotation (uniform in [-rotation_range,
    rotation_range] degrees), shifts, a shear (uniform in [-shear_range, shear_range]
    degrees) and a zoom (zx and zy drawn independently from zoom_range: a number z means
    [1 - z, 1 + z], a pair [low, high]), combined and resampled by apply_affine_transform with
    fill_mode, cval and interpolation_order (0 or 1); then a channel shift and flips.
    `*_shift_range`: a float below 1 is a fraction of the height / width (uniform in
    [-r, r)), an int a number of pixels (one of -r+1 .. r-1), a list the pixel shifts to
    choose from. brightness_range (PIL) and zca_whitening (scipy.linalg) are refused."""

    def __init__(self, featurewise_center=False, samplewise_center=False,
                 featurewise_std_normalization=False, samplewise_std_normalization=False,
                 zca_whitening=False, zca_epsilon=1e-6, rotation_range=0, width_shift_range=0.,
                 height_shift_range=0., brightness_range=None, shear_range=0., zoom_range=0.,
                 channel_shift_range=0., fill_mode="nearest", cval=0., horizontal_flip=False,
                 vertical_flip=False, rescale=None, preprocessing_function=None,
                 data_format=None, validation_split=0.0, interpolation_order=1, dtype=None):
        if brightness_range is not None:
            raise ValueError("ImageDataGenerator: brightness_range needs PIL; not supported")
        if zca_whitening:
            raise ValueError("ImageDataGenerator: zca_whitening needs scipy.linalg; not "
                             "supported")
        if validation_split and not 0 < validation_split < 1:
            raise ValueError("`validation_split` must be strictly between 0 and 1. Received: "
                             "%s" % (validation_split,))
        self._validation_split = validation_split
        if fill_mode not in _FILL_MODES:
            raise ValueError("ImageDataGenerator: fill_mode must be one of %s, not %r"
                             % (", ".join(_FILL_MODES), fill_mode))
        if interpolation_order not in (0, 1):
            raise ValueError("ImageDataGenerator: interpolation_order must be 0 (nearest) or 1 "
                             "(bilinear), not %r" % (interpolation_order,))
        data_format = data_format or K.image_data_format()
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError('`data_format` should be `"channels_last"` (channel after row and '
                             'column) or `"channels_first"` (channel before row and column). '
                             'Received: %s' % (data_format,))
        self.featurewise_center = featurewise_center
        self.samplewise_center = samplewise_center
        self.featurewise_std_normalization = featurewise_std_normalization
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening = False
        self.zca_epsilon = zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range = width_shift_range
        self.height_shift_range = height_shift_range
        self.shear_range = shear_range
        self.zoom_range = _zoom_range(zoom_range)
        self.interpolation_order = interpolation_order
        self.channel_shift_range = channel_shift_range
        self.fill_mode = fill_mode
        self.cval = cval
        self.horizontal_flip = horizontal_flip
        self.vertical_flip = vertical_flip
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.data_format = data_format
        self.dtype = dtype or K.floatx()
        if data_format == "channels_first":
            self.channel_axis, self.row_axis, self.col_axis = 1, 2, 3
        else:
            self.channel_axis, self.row_axis, self.col_axis = 3, 1, 2
        self.mean = None
        self.std = None
        self.principal_components = None

    def flow(self, x, y=None, batch_size=32, shuffle=True, sample_weight=None, seed=None,
             save_to_dir=None, save_prefix="", save_format="png", subset=None):
        """A NumpyArrayIterator over (x, y): batches of transformed, standardised images
        (and their labels; and sample weights when given). `subset` 'validation' takes the
        first validation_split of the rows, 'training' the others, as Keras's."""
        if save_to_dir is not None:
            raise ValueError("ImageDataGenerator.flow: save_to_dir is not supported")
        split = subset_split(self, subset)
        if split is not None:
            rows = int(len(x) * split[1]) if split[0] == 0 else int(len(x) * split[0])
            part = slice(0, rows) if split[0] == 0 else slice(rows, None)
            if y is not None and not np.array_equal(np.unique(np.asarray(y)[:rows]),
                                                    np.unique(np.asarray(y)[rows:])):
                raise ValueError("Training and validation subsets have different number of "
                                 "classes after the split. If your numpy arrays are sorted by "
                                 "the label, you might want to shuffle them.")
            x = np.asarray(x)[part]
            y = None if y is None else np.asarray(y)[part]
            sample_weight = None if sample_weight is None else np.asarray(sample_weight)[part]
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle,
                                  sample_weight=sample_weight, seed=seed,
                                  data_format=self.data_format, dtype=self.dtype)

    def standardize(self, x):
        """One image or a batch (modified in place, as Keras's): preprocessing_function,
        rescale, samplewise then featurewise centring and scaling (std + 1e-6)."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= (np.std(x, keepdims=True) + 1e-6)
        if self.featurewise_center:
            if self.mean is not None:
                x -= self.mean
            else:
                warnings.warn("This ImageDataGenerator specifies `featurewise_center`, but it "
                              "hasn't been fit on any training data. Fit it first by calling "
                              "`.fit(numpy_data)`.")
        if self.featurewise_std_normalization:
            if self.std is not None:
                x /= (self.std + 1e-6)
            else:
                warnings.warn("This ImageDataGenerator specifies "
                              "`featurewise_std_normalization`, but it hasn't been fit on any "
                              "training data. Fit it first by calling `.fit(numpy_data)`.")
        return x

    @staticmethod
    def _shift(shift_range, size):
        try:  # an int or a list: pixels
            t = np.random.choice(shift_range)
            t *= np.random.choice([-1, 1])
        except ValueError:  # a float
            t = np.random.uniform(-shift_range, shift_range)
        if np.max(shift_range) < 1:
            t *= size
        return t

    def get_random_transform(self, img_shape, seed=None):
        """The random parameters of one image's transform (Keras's dict), drawing from
        NumPy's global generator in Keras's order."""
        img_row_axis, img_col_axis = self.row_axis - 1, self.col_axis - 1
        if seed is not None:
            np.random.seed(seed)
        theta = np.random.uniform(-self.rotation_range, self.rotation_range) \
            if self.rotation_range else 0
        tx = self._shift(self.height_shift_range, img_shape[img_row_axis]) \
            if self.height_shift_range else 0
        ty = self._shift(self.width_shift_range, img_shape[img_col_axis]) \
            if self.width_shift_range else 0
        shear = np.random.uniform(-self.shear_range, self.shear_range) \
            if self.shear_range else 0
        zx, zy = _draw_zoom(self.zoom_range)
        flip_horizontal = (np.random.random() < 0.5) * self.horizontal_flip
        flip_vertical = (np.random.random() < 0.5) * self.vertical_flip
        channel_shift_intensity = None
        if self.channel_shift_range != 0:
            channel_shift_intensity = np.random.uniform(-self.channel_shift_range,
                                                        self.channel_shift_range)
        return {"theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy,
                "flip_horizontal": flip_horizontal, "flip_vertical": flip_vertical,
                "channel_shift_intensity": channel_shift_intensity, "brightness": None}

    def apply_transform(self, x, transform_parameters):
        """One image (rank 3) transformed: rotation, shift, shear, zoom, channel shift, flips."""
        img_row_axis, img_col_axis = self.row_axis - 1, self.col_axis - 1
        img_channel_axis = self.channel_axis - 1
        p = transform_parameters
        x = apply_affine_transform(x, p.get("theta", 0), p.get("tx", 0), p.get("ty", 0),
                                   p.get("shear", 0), p.get("zx", 1), p.get("zy", 1),
                                   row_axis=img_row_axis, col_axis=img_col_axis,
                                   channel_axis=img_channel_axis, fill_mode=self.fill_mode,
                                   cval=self.cval, order=self.interpolation_order)
        if p.get("channel_shift_intensity") is not None:
            x = apply_channel_shift(x, p["channel_shift_intensity"], img_channel_axis)
        if p.get("flip_horizontal", False):
            x = flip_axis(x, img_col_axis)
        if p.get("flip_vertical", False):
            x = flip_axis(x, img_row_axis)
        if p.get("brightness") is not None:
            raise ValueError("apply_transform: brightness needs PIL; not supported")
        return x

    def random_transform(self, x, seed=None):
        """One image (rank 3) randomly transformed."""
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def fit(self, x, augment=False, rounds=1, seed=None):
        """Computes the per-channel mean and std of `x` (rank 4) for featurewise_center and
        featurewise_std_normalization (over `rounds` random transforms of it with augment).
        As Keras's, rescale is not applied first."""
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError("Input to `.fit()` should have rank 4. Got array with shape: "
                             + str(x.shape))
        if x.shape[self.channel_axis] not in {1, 3, 4}:
            warnings.warn("Expected input to be images (as Numpy array) following the data "
                          "format convention \"%s\" (channels on axis %d), i.e. expected either "
                          "1, 3 or 4 channels on axis %d. However, it was passed an array with "
                          "shape %s (%d channels)."
                          % (self.data_format, self.channel_axis, self.channel_axis,
                             x.shape, x.shape[self.channel_axis]))
        if seed is not None:
            np.random.seed(seed)
        x = np.copy(x)
        if augment:
            ax = np.zeros(tuple([rounds * x.shape[0]] + list(x.shape)[1:]), dtype=self.dtype)
            for r in range(rounds):
                for i in range(x.shape[0]):
                    ax[i + r * x.shape[0]] = self.random_transform(x[i])
            x = ax
        broadcast_shape = [1, 1, 1]
        broadcast_shape[self.channel_axis - 1] = x.shape[self.channel_axis]
        if self.featurewise_center:
            self.mean = np.mean(x, axis=(0, self.row_axis, self.col_axis))
            self.mean = np.reshape(self.mean, broadcast_shape)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.std(x, axis=(0, self.row_axis, self.col_axis))
            self.std = np.reshape(self.std, broadcast_shape)
            x /= (self.std + 1e-6)


class Iterator(Sequence):
    """Keras's image Iterator: a keras.utils.Sequence of ceil(n / batch_size) batches
    (batch i of the current order, reshuffled by on_epoch_end with shuffle), and also an
    endless Python iterator (next()). With `seed`, NumPy's global generator is seeded with
    seed + the number of batches made so far before each batch, as Keras does."""

    def __init__(self, n, batch_size, shuffle, seed):
        self.n = n
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self.index_array = None
        self.index_generator = self._flow_index()

    def _set_index_array(self):
        self.index_array = np.arange(self.n)
        if self.shuffle:
            self.index_array = np.random.permutation(self.n)

    def __getitem__(self, idx):
        if idx >= len(self):
            raise ValueError("Asked to retrieve element {idx}, but the Sequence has length "
                             "{length}".format(idx=idx, length=len(self)))
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        index_array = self.index_array[self.batch_size * idx:self.batch_size * (idx + 1)]
        return self._get_batches_of_transformed_samples(index_array)

    def __len__(self):
        return (self.n + self.batch_size - 1) // self.batch_size

    def on_epoch_end(self):
        self._set_index_array()

    def reset(self):
        self.batch_index = 0

    def _flow_index(self):
        self.reset()
        while True:
            if self.seed is not None:
                np.random.seed(self.seed + self.total_batches_seen)
            if self.batch_index == 0:
                self._set_index_array()
            current_index = (self.batch_index * self.batch_size) % self.n
            if self.n > current_index + self.batch_size:
                self.batch_index += 1
            else:
                self.batch_index = 0
            self.total_batches_seen += 1
            yield self.index_array[current_index:current_index + self.batch_size]

    def __iter__(self):
        return self

    def __next__(self):
        with self.lock:
            index_array = next(self.index_generator)
        return self._get_batches_of_transformed_samples(index_array)

    next = __next__

    def _get_batches_of_transformed_samples(self, index_array):
        raise NotImplementedError


class NumpyArrayIterator(Iterator):
    """The batches of ImageDataGenerator.flow: x[rows] transformed and standardised image by
    image, then (x, y[rows]) (and sample_weight[rows]); x alone when y is None."""

    def __init__(self, x, y, image_data_generator, batch_size=32, shuffle=False,
                 sample_weight=None, seed=None, data_format="channels_last", dtype="float32"):
        self.dtype = dtype
        if isinstance(x, (list, tuple)):
            raise ValueError("NumpyArrayIterator: x is one array of images (extra inputs are "
                             "not supported)")
        x = np.asarray(x, dtype=self.dtype)
        if y is not None and len(x) != len(y):
            raise ValueError("`x` (images tensor) and `y` (labels) should have the same length. "
                             "Found: x.shape = %s, y.shape = %s"
                             % (x.shape, np.asarray(y).shape))
        if sample_weight is not None and len(x) != len(sample_weight):
            raise ValueError("`x` (images tensor) and `sample_weight` should have the same "
                             "length. Found: x.shape = %s, sample_weight.shape = %s"
                             % (x.shape, np.asarray(sample_weight).shape))
        if x.ndim != 4:
            raise ValueError("Input data in `NumpyArrayIterator` should have rank 4. You passed "
                             "an array with shape", x.shape)
        self.x = x
        self.y = np.asarray(y) if y is not None else None
        self.sample_weight = np.asarray(sample_weight) if sample_weight is not None else None
        self.image_data_generator = image_data_generator
        self.data_format = data_format
        super().__init__(x.shape[0], batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array):
        gen = self.image_data_generator
        batch_x = np.zeros(tuple([len(index_array)] + list(self.x.shape)[1:]), dtype=self.dtype)
        for i, j in enumerate(index_array):
            x = self.x[j]
            params = gen.get_random_transform(x.shape)
            x = gen.apply_transform(x.astype(self.dtype), params)
            batch_x[i] = gen.standardize(x)
        if self.y is None:
            return batch_x
        output = (batch_x, self.y[index_array])
        if self.sample_weight is not None:
            output += (self.sample_weight[index_array],)
        return output


# Images from files (image_files.py): load_img & co., flow_from_directory's DirectoryIterator.
from shardflow.keras.preprocessing.image_files import (  # noqa: E402
    _directory_iterator_class, array_to_img, flow_from_directory, img_to_array, load_img,
    save_img, subset_split)

ImageDataGenerator.flow_from_directory = flow_from_directory
DirectoryIterator = _directory_iterator_class()

__all__ = ["DirectoryIterator", "ImageDataGenerator", "Iterator", "NumpyArrayIterator",
           "apply_affine_transform", "apply_channel_shift", "array_to_img", "flip_axis",
           "img_to_array", "load_img", "random_rotation", "random_shear", "random_shift",
           "random_zoom", "save_img", "transform_matrix_offset_center"]
