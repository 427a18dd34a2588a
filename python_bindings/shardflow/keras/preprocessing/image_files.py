"""Images from files, as TF 1.15's tf.keras.preprocessing.image (keras_preprocessing 1.1):
load_img, img_to_array, array_to_img, save_img, and ImageDataGenerator.flow_from_directory's
DirectoryIterator — a directory of one subdirectory per class, its images read, resized,
augmented and standardised batch by batch:

    gen = ImageDataGenerator(rescale=1 / 255.0, horizontal_flip=True)
    train = gen.flow_from_directory("data/train", target_size=(64, 64), batch_size=32,
                                    class_mode="categorical")
    model.fit_generator(train, epochs=5)            # train.class_indices: {"cat": 0, ...}

Files are decoded with Pillow (Debian's python3-pil); a file Pillow cannot read fails its batch
with an error naming the file. The files found and their order are Keras's: the class
subdirectories in sorted order (or `classes`), the images under each (followed links with
follow_links) sorted by path, with the extensions png, jpg, jpeg, bmp, ppm, tif and tiff.
"""

import os

import numpy as np

from shardflow.keras import backend as K

WHITE_LIST_FORMATS = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")
_COLOR_MODES = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}
_CLASS_MODES = ("categorical", "binary", "sparse", "input", None)


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("loading images needs Pillow (apt-get install python3-pil)") from None
    return Image


def _resample(interpolation):
    Image = _pil()
    methods = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC,
               "lanczos": Image.LANCZOS, "box": Image.BOX, "hamming": Image.HAMMING}
    if interpolation not in methods:
        raise ValueError("Invalid interpolation method %r; supported: %s"
                         % (interpolation, ", ".join(sorted(methods))))
    return methods[interpolation]


def load_img(path, grayscale=False, color_mode="rgb", target_size=None,
             interpolation="nearest"):
    """The image at `path` as a PIL Image in `color_mode` ("grayscale", "rgb", "rgba"),
    resized to target_size (height, width) when given."""
    Image = _pil()
    if grayscale:
        color_mode = "grayscale"
    if color_mode not in _COLOR_MODES:
        raise ValueError('color_mode must be "grayscale", "rgb", or "rgba", not %r'
                         % (color_mode,))
    try:
        img = Image.open(path)
        img.load()
    except (OSError, SyntaxError, ValueError) as e:
        raise OSError("cannot read image %s: %s" % (path, e)) from None
    if img.mode != _COLOR_MODES[color_mode]:
        img = img.convert(_COLOR_MODES[color_mode])
    if target_size is not None:
        height, width = int(target_size[0]), int(target_size[1])
        if img.size != (width, height):
            img = img.resize((width, height), _resample(interpolation))
    return img


def img_to_array(img, data_format=None, dtype=None):
    """A PIL Image as a rank-3 array (a channel axis added to grayscale)."""
    data_format = data_format or K.image_data_format()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError("Unknown data_format: %s" % (data_format,))
    x = np.asarray(img, dtype=dtype or K.floatx())
    if x.ndim == 3:
        return x.transpose(2, 0, 1) if data_format == "channels_first" else x
    if x.ndim == 2:
        return x[np.newaxis] if data_format == "channels_first" else x[..., np.newaxis]
    raise ValueError("Unsupported image shape: %s" % (x.shape,))


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A rank-3 array (1, 3 or 4 channels) as a PIL Image; with `scale`, its values are
    stretched to 0..255 first."""
    Image = _pil()
    data_format = data_format or K.image_data_format()
    x = np.asarray(x, dtype=dtype or K.floatx())
    if x.ndim != 3:
        raise ValueError("Expected image array to have rank 3 (single image). Got array with "
                         "shape: %s" % (x.shape,))
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x = x / top
        x = x * 255
    channels = x.shape[2]
    if channels == 4:
        return Image.fromarray(x.astype("uint8"), "RGBA")
    if channels == 3:
        return Image.fromarray(x.astype("uint8"), "RGB")
    if channels == 1:
        return Image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError("Unsupported channel number: %d" % channels)


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes a rank-3 array as an image file (the format from file_format or the name)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and (file_format == "jpg" or file_format == "jpeg"):
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def _list_files(directory, classes, follow_links, split=None):
    """[(path relative to directory, class index)] in Keras's order; with `split` (start,
    stop) fractions, only that part of each class's files (validation_split's subsets)."""
    found = []
    for index, name in enumerate(classes):
        root = os.path.join(directory, name)
        walked = sorted(os.walk(root, followlinks=follow_links), key=lambda t: t[0])
        files_of_class = [os.path.relpath(os.path.join(folder, f), directory)
                          for folder, _, files in walked for f in sorted(files)
                          if f.lower().rsplit(".", 1)[-1] in WHITE_LIST_FORMATS]
        if split is not None:
            n = len(files_of_class)
            files_of_class = files_of_class[int(split[0] * n):int(split[1] * n)]
        found.extend((f, index) for f in files_of_class)
    return found


def subset_split(image_data_generator, subset):
    """The (start, stop) fractions of the data in `subset` ('training', 'validation' or None)
    for the generator's validation_split, as Keras's: validation is the first part."""
    if subset is None:
        return None
    if subset not in ("training", "validation"):
        raise ValueError('Invalid subset name: %s; expected "training" or "validation"'
                         % (subset,))
    fraction = getattr(image_data_generator, "_validation_split", 0.0)
    if not fraction:
        raise ValueError("subset=%r needs ImageDataGenerator(validation_split=...)" % (subset,))
    return (0.0, fraction) if subset == "validation" else (fraction, 1.0)


_DIRECTORY_ITERATOR = []   # the class, made once (it subclasses image.Iterator)


def _directory_iterator_class():
    if _DIRECTORY_ITERATOR:
        return _DIRECTORY_ITERATOR[0]
    from shardflow.keras.preprocessing.image import Iterator

    class DirectoryIterator(Iterator):
        """The batches of ImageDataGenerator.flow_from_directory (the module's text):
        `filenames` (relative to the directory), `classes` (each file's class index),
        `class_indices` ({name: index}), `num_classes`, `samples`, `image_shape`."""

        def __init__(self, directory, image_data_generator, target_size=(256, 256),
                     color_mode="rgb", classes=None, class_mode="categorical", batch_size=32,
                     shuffle=True, seed=None, data_format=None, save_to_dir=None,
                     save_prefix="", save_format="png", follow_links=False, subset=None,
                     interpolation="nearest", dtype=None):
            if color_mode not in _COLOR_MODES:
                raise ValueError('Invalid color mode: %s; expected "rgb", "rgba", or '
                                 '"grayscale".' % (color_mode,))
            if class_mode not in _CLASS_MODES:
                raise ValueError('Invalid class_mode: %s; expected one of "categorical", '
                                 '"binary", "sparse", "input" or None.' % (class_mode,))
            split = subset_split(image_data_generator, subset)
            if not os.path.isdir(directory):
                raise ValueError("flow_from_directory: %s is not a directory" % (directory,))
            _resample(interpolation)   # an unknown method fails now, not at the first batch
            self.directory = directory
            self.image_data_generator = image_data_generator
            self.target_size = tuple(int(d) for d in target_size)
            self.color_mode = color_mode
            self.data_format = data_format or K.image_data_format()
            self.dtype = dtype or K.floatx()
            channels = {"rgb": 3, "rgba": 4, "grayscale": 1}[color_mode]
            self.image_shape = (self.target_size + (channels,)
                                if self.data_format == "channels_last"
                                else (channels,) + self.target_size)
            self.class_mode = class_mode
            self.interpolation = interpolation
            self.save_to_dir, self.save_prefix, self.save_format = (save_to_dir, save_prefix,
                                                                    save_format)
            if not classes:
                classes = sorted(d for d in os.listdir(directory)
                                 if os.path.isdir(os.path.join(directory, d)))
            self.num_classes = len(classes)
            self.class_indices = dict(zip(classes, range(len(classes))))
            files = _list_files(directory, classes, follow_links, split)
            self.filenames = [f for f, _ in files]
            self.classes = np.array([c for _, c in files], dtype="int32")
            self.samples = len(files)
            print("Found %d images belonging to %d classes." % (self.samples,
                                                                self.num_classes))
            super().__init__(self.samples, batch_size, shuffle, seed)

        @property
        def filepaths(self):
            return [os.path.join(self.directory, f) for f in self.filenames]

        @property
        def labels(self):
            return self.classes

        def _get_batches_of_transformed_samples(self, index_array):
            gen = self.image_data_generator
            batch_x = np.zeros((len(index_array),) + self.image_shape, dtype=self.dtype)
            for i, j in enumerate(index_array):
                img = load_img(os.path.join(self.directory, self.filenames[j]),
                               color_mode=self.color_mode, target_size=self.target_size,
                               interpolation=self.interpolation)
                x = img_to_array(img, data_format=self.data_format, dtype=self.dtype)
                if gen is not None:
                    x = gen.apply_transform(x, gen.get_random_transform(x.shape))
                    x = gen.standardize(x)
                batch_x[i] = x
            if self.save_to_dir:
                for i, j in enumerate(index_array):
                    name = "%s_%d_%d.%s" % (self.save_prefix, j,
                                            np.random.randint(10000), self.save_format)
                    save_img(os.path.join(self.save_to_dir, name), batch_x[i],
                             data_format=self.data_format)
            if self.class_mode == "input":
                return batch_x, batch_x.copy()
            if self.class_mode is None:
                return batch_x
            labels = self.classes[index_array]
            if self.class_mode == "sparse":
                return batch_x, labels.astype(self.dtype)
            if self.class_mode == "binary":
                return batch_x, labels.astype(self.dtype)
            batch_y = np.zeros((len(index_array), self.num_classes), dtype=self.dtype)
            batch_y[np.arange(len(index_array)), labels] = 1.0
            return batch_x, batch_y

    _DIRECTORY_ITERATOR.append(DirectoryIterator)
    return DirectoryIterator


def flow_from_directory(self, directory, target_size=(256, 256), color_mode="rgb",
                        classes=None, class_mode="categorical", batch_size=32, shuffle=True,
                        seed=None, save_to_dir=None, save_prefix="", save_format="png",
                        follow_links=False, subset=None, interpolation="nearest"):
    """ImageDataGenerator.flow_from_directory: a DirectoryIterator (the module's text) whose
    images this generator augments and standardises."""
    return _directory_iterator_class()(
        directory, self, target_size=target_size, color_mode=color_mode, classes=classes,
        class_mode=class_mode, batch_size=batch_size, shuffle=shuffle, seed=seed,
        data_format=self.data_format, save_to_dir=save_to_dir, save_prefix=save_prefix,
        save_format=save_format, follow_links=follow_links, subset=subset,
        interpolation=interpolation, dtype=self.dtype)
