"""TF1's bounding-box ops for tf.image: crop_and_resize (a gather composite: gradients flow to
the image and the boxes), and non_max_suppression, sample_distorted_bounding_box and
draw_bounding_boxes as PyFunc nodes (TF1 has no gradient for these either).

Example::

    crops = sf.image.crop_and_resize(images, boxes, box_ind, [14, 14])   # [num_boxes, 14, 14, c]
    keep = sf.image.non_max_suppression(boxes, scores, max_output_size=10, iou_threshold=0.5)
    begin, size, _ = sf.image.sample_distorted_bounding_box([h, w, 3], bbox, seed=1)

Boxes are [y_min, x_min, y_max, x_max], normalized to [0, 1] of the image's height and width
(non_max_suppression takes any consistent coordinates). The PyFunc ops run in the process that
built the graph (shardflow/script_ops.py).
"""

import numpy as np

from shardflow import dtypes, ops
from shardflow.array_ops import gather, where_v2
from shardflow.framework import Tensor, convert_to_tensor
from shardflow.script_ops import py_func


def _crop_axis(lo, hi, n_in, n_out, method):
    """Sample positions along one axis for every box ([num_boxes, n_out]), their validity and
    the (index_low, index_high, lerp) of each position. n_in is an int, or a scalar int32
    tensor when the image's size is known only when the step runs."""
    extent = (ops.cast(n_in - 1, dtypes.float32) if isinstance(n_in, Tensor)
              else float(n_in - 1))
    if n_out > 1:
        step = (hi - lo) * extent / float(n_out - 1)
        pos = lo * extent + step * np.arange(n_out, dtype=np.float32)[None, :]
    else:
        pos = (lo + hi) * (0.5 * extent)
    valid = ops.logical_and(ops.greater_equal(pos, 0.0), ops.less_equal(pos, extent))
    fixed = ops.stop_gradient(pos)
    if method == "nearest":
        low = ops.floor(fixed + 0.5)
        high, lerp = low, None
    else:
        low, high = ops.floor(fixed), ops.ceil(fixed)
        lerp = pos - low
    low = ops.cast(ops.clip_by_value(low, 0.0, extent), dtypes.int32)
    high = ops.cast(ops.clip_by_value(high, 0.0, extent), dtypes.int32)
    return valid, low, high, lerp


def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear",
                    extrapolation_value=0.0, name=None, box_indices=None):
    """Crops of [batch, h, w, c] `image`, one per row of `boxes` [num_boxes, 4] (normalized
    y1, x1, y2, x2; y1 > y2 flips) taken from image `box_ind[i]`, each resampled to
    crop_size = [crop_height, crop_width] by bilinear (or nearest) interpolation; positions
    outside the image get extrapolation_value. float32 [num_boxes, crop_height, crop_width, c].
    """
    box_ind = box_ind if box_ind is not None else box_indices
    if box_ind is None or crop_size is None:
        raise ValueError("crop_and_resize needs box_ind (box_indices) and crop_size")
    if method not in ("bilinear", "nearest"):
        raise ValueError("crop_and_resize: method is 'bilinear' or 'nearest', got %r" % (method,))
    from shardflow.tensor_util import constant_value
    x = convert_to_tensor(image)
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or len(dims) != 4:
        raise ValueError("crop_and_resize takes a 4-D [batch, height, width, channels] image, "
                         "got shape %s" % x.shape)
    sizes = constant_value(crop_size) if isinstance(crop_size, Tensor) else crop_size
    if sizes is None:
        raise ValueError("crop_and_resize: crop_size must be known when the graph is built (two "
                         "ints, or a constant)")
    crop_h, crop_w = (int(v) for v in np.asarray(sizes).reshape(-1).tolist())
    if crop_h <= 0 or crop_w <= 0:
        raise ValueError("crop_and_resize: crop_size must be positive, got %r" % (crop_size,))
    # A feature map whose size is known only when the step runs (Faster R-CNN on images of
    # any size): the sizes are scalar tensors.
    run_shape = ops.shape(x)
    h, w, c = (d if d is not None else run_shape[k + 1] for k, d in enumerate(dims[1:]))
    x = ops.cast(x, dtypes.float32) if x.dtype != dtypes.float32 else x
    boxes = convert_to_tensor(boxes, dtype=dtypes.float32)
    if boxes.shape.ndims != 2 or boxes.shape.as_list()[1] not in (None, 4):
        raise ValueError("crop_and_resize: boxes must be [num_boxes, 4], got shape %s"
                         % boxes.shape)
    box_ind = ops.cast(convert_to_tensor(box_ind), dtypes.int32)
    y1, x1, y2, x2 = (boxes[:, i:i + 1] for i in range(4))
    valid_y, top, bottom, y_lerp = _crop_axis(y1, y2, h, crop_h, method)
    valid_x, left, right, x_lerp = _crop_axis(x1, x2, w, crop_w, method)
    from shardflow.array_ops import stack
    flat = ops.reshape(x, stack([-1, c]) if isinstance(c, Tensor) else [-1, c])
    row_base = ops.reshape(box_ind * h, [-1, 1])                    # [n, 1]

    def pick(rows, cols):
        lin = ops.expand_dims((row_base + rows) * w, 2) + ops.expand_dims(cols, 1)
        return gather(flat, lin)                                     # [n, crop_h, crop_w, c]
    if method == "nearest":
        out = pick(top, left)
    else:
        xl = ops.reshape(x_lerp, [-1, 1, crop_w, 1])
        yl = ops.reshape(y_lerp, [-1, crop_h, 1, 1])
        tl, tr = pick(top, left), pick(top, right)
        bl, br = pick(bottom, left), pick(bottom, right)
        upper = tl + (tr - tl) * xl
        lower = bl + (br - bl) * xl
        out = upper + (lower - upper) * yl
    valid = ops.logical_and(ops.reshape(valid_y, [-1, crop_h, 1, 1]),
                            ops.reshape(valid_x, [-1, 1, crop_w, 1]))
    return where_v2(valid, out, ops.constant(float(extrapolation_value), dtypes.float32),
                    name=name)


def extract_glimpse(input, size, offsets, centered=True, normalized=True,  # noqa: A002
                    uniform_noise=True, name=None, noise=None):
    """A [glimpse_h, glimpse_w] window of each image of [batch, h, w, c] `input` around
    offsets [batch, 2] (y, x), as TF1's tf.image.extract_glimpse: with `normalized` the offsets
    are fractions of the image's size, with `centered` they run from -1 to 1 about its centre
    (otherwise from its top-left corner); the window's top-left pixel is the offset less half
    the glimpse, truncated toward zero. Pixels off the image are noise: uniform between the
    image's min and max ('uniform', the default), per-channel Gaussian ('gaussian', with
    uniform_noise=False) or 'zero'. float32 [batch, glimpse_h, glimpse_w, c]."""
    from shardflow import array_ops
    x = convert_to_tensor(input)
    if x.shape.ndims not in (None, 4):
        raise ValueError("extract_glimpse takes 4-D [batch, height, width, channels] images, got "
                         "shape %s" % x.shape)
    x = ops.cast(x, dtypes.float32) if x.dtype != dtypes.float32 else x
    glimpse = [int(v) for v in np.asarray(size).reshape(-1).tolist()]
    if len(glimpse) != 2 or min(glimpse) <= 0:
        raise ValueError("extract_glimpse: size must be two positive ints [height, width], got "
                         "%r" % (size,))
    mode = noise or ("uniform" if uniform_noise else "gaussian")
    if mode not in ("uniform", "gaussian", "zero"):
        raise ValueError("extract_glimpse: noise is 'uniform', 'gaussian' or 'zero', got %r"
                         % (noise,))
    gh, gw = glimpse
    shape = ops.shape(x)
    h_f, w_f = ops.cast(shape[1], dtypes.float32), ops.cast(shape[2], dtypes.float32)
    offsets = ops.cast(convert_to_tensor(offsets), dtypes.float32)
    y, xo = offsets[:, 0], offsets[:, 1]
    if normalized:
        y, xo = y * h_f, xo * w_f
    if centered:
        y, xo = y / 2.0 + h_f / 2.0, xo / 2.0 + w_f / 2.0
    top = ops.cast(y - gh / 2.0, dtypes.int32)                     # C's truncation toward 0
    left = ops.cast(xo - gw / 2.0, dtypes.int32)
    rows = ops.expand_dims(top, 1) + np.arange(gh, dtype=np.int32)  # [batch, gh]
    cols = ops.expand_dims(left, 1) + np.arange(gw, dtype=np.int32)  # [batch, gw]
    valid = ops.logical_and(
        ops.expand_dims(ops.logical_and(rows >= 0, rows < shape[1]), 2),
        ops.expand_dims(ops.logical_and(cols >= 0, cols < shape[2]), 1))
    batch_base = ops.expand_dims(array_ops.range(shape[0]) * shape[1], 1)
    lin = (ops.expand_dims(ops.clip_by_value(rows, 0, shape[1] - 1) + batch_base, 2) *
           shape[2] + ops.expand_dims(ops.clip_by_value(cols, 0, shape[2] - 1), 1))
    flat = ops.reshape(x, array_ops.stack([-1, shape[3]]))
    picked = gather(flat, lin)                                      # [batch, gh, gw, c]
    out_shape = array_ops.stack([shape[0], gh, gw, shape[3]])
    if mode == "zero":
        fill = ops.zeros(out_shape, dtypes.float32)
    elif mode == "uniform":
        lo = ops.reduce_min(x, axis=[1, 2, 3], keepdims=True)
        hi = ops.reduce_max(x, axis=[1, 2, 3], keepdims=True)
        fill = lo + ops.random_uniform(out_shape) * (hi - lo)
    else:
        mean = ops.reduce_mean(x, axis=[1, 2], keepdims=True)
        std = ops.sqrt(ops.reduce_mean(ops.square(x - mean), axis=[1, 2], keepdims=True))
        fill = ops.clip_by_value(mean + ops.random_normal(out_shape) * std,
                                 ops.reduce_min(x, axis=[1, 2], keepdims=True),
                                 ops.reduce_max(x, axis=[1, 2], keepdims=True))
    out = where_v2(ops.expand_dims(valid, 3), picked, fill, name=name)
    out.set_shape([x.shape.as_list()[0] if x.shape.ndims else None, gh, gw,
                   x.shape.as_list()[3] if x.shape.ndims else None])
    return out


def _iou(box, others):
    """Intersection over union of one [4] box with [k, 4] boxes (TF's corner handling)."""
    def corners(b):
        return (np.minimum(b[..., 0], b[..., 2]), np.minimum(b[..., 1], b[..., 3]),
                np.maximum(b[..., 0], b[..., 2]), np.maximum(b[..., 1], b[..., 3]))
    ay0, ax0, ay1, ax1 = corners(box)
    by0, bx0, by1, bx1 = corners(others)
    area_a = (ay1 - ay0) * (ax1 - ax0)
    area_b = (by1 - by0) * (bx1 - bx0)
    inter = (np.clip(np.minimum(ay1, by1) - np.maximum(ay0, by0), 0, None) *
             np.clip(np.minimum(ax1, bx1) - np.maximum(ax0, bx0), 0, None))
    union = area_a + area_b - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where((area_a > 0) & (area_b > 0), inter / np.where(union > 0, union, 1), 0.0)
    return iou


def _nms(similarity, scores, max_out, threshold, score_threshold, soft_sigma=0.0):
    """TF's NonMaxSuppression kernel (V3 to V5 and the overlaps variant): candidates above
    score_threshold by decreasing score (ties: the lower index); one whose similarity with a
    pick exceeds `threshold` is dropped or, with soft_sigma > 0 (Soft-NMS), has its score
    scaled by exp(-0.5 sim^2 / soft_sigma) and goes back to the queue. `similarity(i, picks)`
    gives candidate i's similarity with each pick. Returns (indices, scores)."""
    import heapq
    scores = np.asarray(scores, np.float32).reshape(-1)
    soft = soft_sigma > 0
    scale = np.float32(-0.5 / soft_sigma) if soft else np.float32(0.0)
    queue = [(-scores[i], i, scores[i], 0) for i in range(scores.shape[0])
             if scores[i] > score_threshold]
    heapq.heapify(queue)
    picks, picked_scores = [], []
    while len(picks) < int(max_out) and queue:
        _, i, score, begin = heapq.heappop(queue)
        original, hard = score, False
        sims = similarity(i, picks[begin:]) if len(picks) > begin else []
        if not soft:          # hard NMS: one vectorized test (thousands of proposals)
            if len(sims) and np.max(sims) > threshold:
                continue
            picks.append(i)
            picked_scores.append(score)
            continue
        for sim in list(sims)[::-1]:                 # the latest picks first, as the kernel
            weight = np.exp(scale * np.float32(sim) * np.float32(sim))
            if not soft and sim > threshold:
                hard = True
                break
            score = np.float32(score * (weight if soft or sim <= threshold else 0.0))
            if score <= score_threshold:
                break
        if hard:
            continue
        if score == original:
            picks.append(i)
            picked_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-score, i, score, len(picks)))
    return np.asarray(picks, np.int32), np.asarray(picked_scores, np.float32)


def _box_similarity(boxes, count):
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    if boxes.shape[0] != count:
        raise ValueError("non_max_suppression: %d boxes but %d scores" % (boxes.shape[0], count))
    boxes = boxes.astype(np.float64)
    return lambda i, picks: _iou(boxes[i], boxes[np.asarray(picks, np.int64)])


def _greedy_nms(boxes, scores, max_out, iou_threshold, score_threshold, soft_sigma=0.0):
    scores = np.asarray(scores, np.float32).reshape(-1)
    return _nms(_box_similarity(boxes, scores.shape[0]), scores, max_out, iou_threshold,
                score_threshold, soft_sigma)


def _check_iou(value, what):
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError("%s: iou_threshold must be in [0, 1], got %r" % (what, float(value)))
    return float(value)


def _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold, what):
    """The py_func inputs: boxes, scores, max_output_size and the two thresholds (Python
    numbers, or scalar tensors as TF1 takes: checked when the step runs). `what` None: the
    first threshold is not an IoU (overlaps), no [0, 1] check."""
    if what is not None and not isinstance(iou_threshold, Tensor):
        _check_iou(iou_threshold, what)
    return [convert_to_tensor(boxes, dtype=dtypes.float32),
            convert_to_tensor(scores, dtype=dtypes.float32),
            ops.cast(convert_to_tensor(max_output_size), dtypes.int32),
            ops.cast(convert_to_tensor(iou_threshold), dtypes.float32),
            ops.cast(convert_to_tensor(score_threshold), dtypes.float32)]


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name=None):
    """Indices (int32, at most max_output_size) of boxes [n, 4] picked greedily by decreasing
    score, dropping any whose IoU with one already picked exceeds iou_threshold, and any whose
    score is not above score_threshold."""
    def run(b, s, m, iou, floor):
        return _greedy_nms(b, s, m, _check_iou(iou, "non_max_suppression"), float(floor))[0]
    out = py_func(run, _nms_inputs(boxes, scores, max_output_size, iou_threshold,
                                   score_threshold, "non_max_suppression"), dtypes.int32,
                  stateful=False, name=name or "NonMaxSuppression")
    out.set_shape([None])
    return out


def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5,
                                    score_threshold=float("-inf"), soft_nms_sigma=0.0,
                                    name=None):
    """(indices, scores) of non_max_suppression, or of Soft-NMS (Bodla et al.) with
    soft_nms_sigma > 0: an overlapping box's score decays by exp(-0.5 iou^2 / sigma) instead
    of the box being dropped, as TF1's NonMaxSuppressionV5; the scores are the decayed ones."""
    what = "non_max_suppression_with_scores"
    sigma = float(soft_nms_sigma)
    if sigma < 0:
        raise ValueError("non_max_suppression_with_scores: soft_nms_sigma must be >= 0, got %r"
                         % (soft_nms_sigma,))

    def run(b, s, m, iou, floor):
        return _greedy_nms(b, s, m, _check_iou(iou, what), float(floor), sigma)
    picks, picked = py_func(run, _nms_inputs(boxes, scores, max_output_size, iou_threshold,
                                             score_threshold, what),
                            [dtypes.int32, dtypes.float32], stateful=False,
                            name=name or "NonMaxSuppressionV5")
    picks.set_shape([None])
    picked.set_shape([None])
    return picks, picked


def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5,
                               score_threshold=float("-inf"), pad_to_max_output_size=False,
                               name=None):
    """(indices, valid_count) of non_max_suppression; with pad_to_max_output_size the
    indices are padded with zeros to max_output_size (TF1's NonMaxSuppressionV4)."""
    what = "non_max_suppression_padded"
    pad = bool(pad_to_max_output_size)

    def run(b, s, m, iou, floor):
        picks = _greedy_nms(b, s, m, _check_iou(iou, what), float(floor))[0]
        valid = np.int32(picks.shape[0])
        if pad:
            picks = np.concatenate([picks, np.zeros(int(m) - picks.shape[0], np.int32)])
        return picks, valid
    picks, valid = py_func(run, _nms_inputs(boxes, scores, max_output_size, iou_threshold,
                                            score_threshold, what),
                           [dtypes.int32, dtypes.int32], stateful=False,
                           name=name or "NonMaxSuppressionV4")
    static = np.asarray(max_output_size) if not isinstance(max_output_size, Tensor) else None
    picks.set_shape([int(static)] if pad and static is not None else [None])
    valid.set_shape([])
    return picks, valid


def non_max_suppression_overlaps(overlaps, scores, max_output_size, overlap_threshold=0.5,
                                 score_threshold=float("-inf"), name=None):
    """non_max_suppression with the similarity of boxes i and j given as overlaps[i, j]
    ([n, n]) instead of their IoU."""
    def run(o, s, m, threshold, floor):
        o = np.asarray(o, np.float32)
        s = np.asarray(s, np.float32).reshape(-1)
        if o.shape != (s.shape[0], s.shape[0]):
            raise ValueError("non_max_suppression_overlaps: overlaps must be [%d, %d], got %s"
                             % (s.shape[0], s.shape[0], list(o.shape)))
        return _nms(lambda i, picks: o[i, picks], s, m, float(threshold), float(floor))[0]
    inputs = _nms_inputs(overlaps, scores, max_output_size, overlap_threshold, score_threshold,
                         None)
    out = py_func(run, inputs, dtypes.int32,
                  stateful=False, name=name or "NonMaxSuppressionWithOverlaps")
    out.set_shape([None])
    return out


def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size,
                                 iou_threshold=0.5, score_threshold=float("-inf"),
                                 pad_per_class=False, clip_boxes=True, name=None):
    """TF1's CombinedNonMaxSuppression: for each image of boxes [batch, n, q, 4] (q 1: one
    box for every class, or one per class) and scores [batch, n, classes], NMS within each
    class (at most max_output_size_per_class), then the best max_total_size of all classes by
    score. Returns (nmsed_boxes [batch, d, 4], nmsed_scores [batch, d], nmsed_classes
    [batch, d] float32, valid_detections [batch] int32), padded with zeros, d =
    max_total_size (min(per_class * classes, max_total_size) with pad_per_class); boxes
    clipped to [0, 1] with clip_boxes."""
    iou = _check_iou(iou_threshold, "combined_non_max_suppression")
    floor = float(np.float32(score_threshold))
    per_class, total = int(max_output_size_per_class), int(max_total_size)
    b = convert_to_tensor(boxes, dtype=dtypes.float32)
    sc = convert_to_tensor(scores, dtype=dtypes.float32)
    if b.shape.ndims != 4 or sc.shape.ndims != 3:
        raise ValueError("combined_non_max_suppression: boxes must be [batch, num_boxes, q, 4] "
                         "and scores [batch, num_boxes, num_classes], got %s and %s"
                         % (b.shape, sc.shape))
    num_classes = sc.shape.as_list()[2]
    if pad_per_class and num_classes is None:
        raise ValueError("combined_non_max_suppression(pad_per_class=True) needs the number of "
                         "classes known when the graph is built")
    detections = min(per_class * num_classes, total) if pad_per_class else total

    def run(all_boxes, all_scores):
        batch, _, q, _ = all_boxes.shape
        out_boxes = np.zeros([batch, detections, 4], np.float32)
        out_scores = np.zeros([batch, detections], np.float32)
        out_classes = np.zeros([batch, detections], np.float32)
        valid = np.zeros([batch], np.int32)
        for i in range(batch):
            found = []
            for c in range(all_scores.shape[2]):
                class_boxes = all_boxes[i, :, c if q > 1 else 0]
                picks, picked = _greedy_nms(class_boxes, all_scores[i, :, c], per_class, iou,
                                            floor)
                found += [(-sv, c, k, class_boxes[k]) for k, sv in zip(picks, picked)]
            found.sort(key=lambda t: (t[0], t[1], t[2]))
            found = found[:detections]
            valid[i] = len(found)
            for j, (neg, c, _, box) in enumerate(found):
                out_boxes[i, j] = np.clip(box, 0.0, 1.0) if clip_boxes else box
                out_scores[i, j], out_classes[i, j] = -neg, c
        return out_boxes, out_scores, out_classes, valid
    outs = py_func(run, [b, sc], [dtypes.float32, dtypes.float32, dtypes.float32, dtypes.int32],
                   stateful=False, name=name or "CombinedNonMaxSuppression")
    batch = b.shape.as_list()[0]
    for out, shape in zip(outs, ([batch, detections, 4], [batch, detections],
                                 [batch, detections], [batch])):
        out.set_shape(shape)
    return tuple(outs)


def _lrint(v):
    """C's lrintf: float32 rounded half to even."""
    return int(np.rint(np.float32(v)))


def _random_crop(rng, h, w, min_area, max_area, ratio):
    """TF's GenerateRandomCrop: a (y, x, height, width) crop whose height is drawn uniformly
    between the smallest and largest that fit the area range at this aspect ratio (width =
    round(height * ratio)), or None. Float32 arithmetic, as the kernel's."""
    min_area = np.float32(min_area) * np.float32(w) * np.float32(h)
    max_area = np.float32(max_area) * np.float32(w) * np.float32(h)
    height = _lrint(np.sqrt(min_area / ratio))
    max_height = _lrint(np.sqrt(max_area / ratio))
    if _lrint(max_height * ratio) > w:
        max_height = int((w + 0.5 - 1e-7) / ratio)
        if _lrint(max_height * ratio) > w:
            max_height -= 1
    max_height = min(max_height, h)
    height = min(height, max_height)
    if height < max_height:
        height += rng.randint(max_height - height + 1)
    width = _lrint(height * ratio)
    area = np.float32(width * height)
    if area < min_area:
        height += 1
        width = _lrint(height * ratio)
        area = np.float32(width * height)
    if area > max_area:
        height -= 1
        width = _lrint(height * ratio)
        area = np.float32(width * height)
    if area < min_area or area > max_area or width > w or height > h or width <= 0 or \
            height <= 0:
        return None
    # The kernel draws in [0, h - height): a crop never touches the bottom or right edge.
    y = rng.randint(h - height) if height < h else 0
    x = rng.randint(w - width) if width < w else 0
    return y, x, height, width


def _covers(crop, boxes, min_covered):
    """TF's SatisfiesOverlapConstraints: the crop (y, x, h, w) covers at least min_covered of
    one of the pixel boxes (y0, x0, y1, x1) that are not empty."""
    y, x, ch, cw = crop
    if ch * cw < 1:
        return False
    for y0, x0, y1, x1 in boxes:
        area = (y1 - y0) * (x1 - x0)
        if area < 1:
            continue
        iy0, ix0, iy1, ix1 = max(y, y0), max(x, x0), min(y + ch, y1), min(x + cw, x1)
        inter = (iy1 - iy0) * (ix1 - ix0) if iy0 <= iy1 and ix0 <= ix1 else 0
        if np.float32(inter) / np.float32(area) >= min_covered:
            return True
    return False


def _distorted_box(rng, size, boxes, min_covered, aspect_range, area_range, attempts,
                   use_image):
    """TF's SampleDistortedBoundingBox kernel: up to `attempts` crops, each with an aspect
    ratio drawn uniformly from aspect_range, until one covers enough of a box; else the
    whole image. (y, x, height, width)."""
    h, w = int(size[0]), int(size[1])
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    if boxes.size and (boxes.min() < 0.0 or boxes.max() > 1.0):
        raise ValueError("sample_distorted_bounding_box: all bounding box coordinates must be "
                         "in [0.0, 1.0], got %s" % boxes.tolist())
    pixel = [(int(b[0] * np.float32(h)), int(b[1] * np.float32(w)), int(b[2] * np.float32(h)),
              int(b[3] * np.float32(w))) for b in boxes]
    if not pixel:
        if not use_image:
            raise ValueError("sample_distorted_bounding_box: no bounding boxes given; pass some "
                             "or use_image_if_no_bounding_boxes=True")
        pixel = [(0, 0, h, w)]
    lo, hi = np.float32(aspect_range[0]), np.float32(aspect_range[1])
    for _ in range(int(attempts)):
        ratio = np.float32(rng.random_sample()) * (hi - lo) + lo
        crop = _random_crop(rng, h, w, area_range[0], area_range[1], ratio)
        if crop is not None and _covers(crop, pixel, min_covered):
            return crop
    return 0, 0, h, w


def sample_distorted_bounding_box(image_size, bounding_boxes, seed=None, seed2=None,
                                  min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                                  area_range=(0.05, 1.0), max_attempts=100,
                                  use_image_if_no_bounding_boxes=False, name=None):
    """A random crop of an image of image_size [h, w, c] that covers at least
    min_object_covered of one of bounding_boxes ([batch, n, 4] normalized), with aspect
    ratio (w / h) and area fraction in the given ranges; after max_attempts the whole image.
    Returns (begin [3], size [3], bboxes [1, 1, 4]) for tf.slice, as TF1. The crops are drawn
    as TF's kernel draws them (the height uniform for each aspect ratio, the offset uniform);
    a seed (the op's or the graph's) repeats its sequence in each session, but not TF's exact
    crops (another generator)."""
    # None is the kernel's default, as TF1's wrapper passes it on.
    aspect = tuple(float(v) for v in (aspect_ratio_range or (0.75, 1.33)))
    areas = tuple(float(v) for v in (area_range or (0.05, 1.0)))
    max_attempts = 100 if max_attempts is None else max_attempts
    use_image_if_no_bounding_boxes = bool(use_image_if_no_bounding_boxes)
    if aspect[0] <= 0 or aspect[1] < aspect[0] or not 0 < areas[0] <= areas[1] <= 1:
        raise ValueError("sample_distorted_bounding_box: need 0 < aspect_ratio_range[0] <= [1] "
                         "and 0 < area_range[0] <= area_range[1] <= 1, got %r and %r"
                         % (aspect_ratio_range, area_range))
    if int(max_attempts) <= 0:
        raise ValueError("sample_distorted_bounding_box: max_attempts must be positive, got %r"
                         % (max_attempts,))
    op_seed = seed if seed2 is None else (int(seed or 0) * 1000003 + int(seed2)) % (2 ** 31 - 1)
    # Each run's generator is seeded by a draw of the engine's seeded (per session) stream.
    key = ops.random_uniform([2], 0, 2 ** 31 - 1, dtype=dtypes.int64, seed=op_seed or None)

    def run(size, boxes, covered, key):
        rng = np.random.RandomState([int(k) for k in key])
        y0, x0, ch, cw = _distorted_box(rng, size, boxes, np.float32(covered), aspect, areas,
                                        max_attempts, use_image_if_no_bounding_boxes)
        h, w = np.float32(size[0]), np.float32(size[1])
        box = np.array([y0, x0, y0 + ch, x0 + cw], np.float32) / np.array([h, w, h, w])
        return (np.array([y0, x0, 0], np.int32), np.array([ch, cw, -1], np.int32),
                box.reshape(1, 1, 4).astype(np.float32))
    covered = min_object_covered if isinstance(min_object_covered, Tensor) else \
        np.float32(min_object_covered)
    begin, size, bboxes = py_func(
        run, [ops.cast(convert_to_tensor(image_size), dtypes.int32),
              convert_to_tensor(bounding_boxes, dtype=dtypes.float32),
              ops.cast(convert_to_tensor(covered), dtypes.float32), key],
        [dtypes.int32, dtypes.int32, dtypes.float32], name=name or "SampleDistortedBoundingBox")
    begin.set_shape([3])
    size.set_shape([3])
    bboxes.set_shape([1, 1, 4])
    return begin, size, bboxes


_COLORS = np.array([[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1],
                    [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1],
                    [1, 0, 1, 1]], np.float32)


def _draw(images, boxes, colors):
    canvas = np.array(images, copy=True)
    _, h, w, depth = canvas.shape
    table = np.array(colors, np.float32).reshape(-1, 4) if colors is not None else _COLORS.copy()
    if depth == 1:
        table[:, 0] = 1.0          # gray images: white boxes, as TF
    for b in range(canvas.shape[0]):
        for k, box in enumerate(np.asarray(boxes[b]).reshape(-1, 4)):
            color = table[k % len(table)][:depth]
            r0, c0 = int(box[0] * (h - 1)), int(box[1] * (w - 1))
            r1, c1 = int(box[2] * (h - 1)), int(box[3] * (w - 1))
            if r0 > r1 or c0 > c1 or r0 >= h or c0 >= w or r1 < 0 or c1 < 0:
                continue
            rc0, rc1, cc0, cc1 = max(r0, 0), min(r1, h - 1), max(c0, 0), min(c1, w - 1)
            for r in (r0, r1):
                if 0 <= r < h:
                    canvas[b, r, cc0:cc1 + 1] = color
            for col in (c0, c1):
                if 0 <= col < w:
                    canvas[b, rc0:rc1 + 1, col] = color
    return canvas


def draw_bounding_boxes(images, boxes, name=None, colors=None):
    """[batch, h, w, depth] float images (depth 1, 3 or 4) with 1-pixel outlines of boxes
    [batch, n, 4] drawn in TF's colour table (or `colors` [k, 4], cycled)."""
    x = convert_to_tensor(images)
    if x.shape.ndims != 4 or x.shape.as_list()[3] not in (None, 1, 3, 4):
        raise ValueError("draw_bounding_boxes takes [batch, height, width, depth] images with "
                         "depth 1, 3 or 4, got shape %s" % x.shape)
    if not x.dtype.is_floating:
        raise TypeError("draw_bounding_boxes takes float images, not %s" % x.dtype.name)
    table = None if colors is None else np.asarray(colors, np.float32)
    out = py_func(lambda i, b: _draw(i, b, table),
                  [x, convert_to_tensor(boxes, dtype=dtypes.float32)], x.dtype,
                  stateful=False, name=name or "DrawBoundingBoxes")
    out.set_shape(x.shape)
    return out


__all__ = ["combined_non_max_suppression", "crop_and_resize", "draw_bounding_boxes",
           "extract_glimpse", "non_max_suppression", "non_max_suppression_overlaps",
           "non_max_suppression_padded", "non_max_suppression_with_scores",
           "sample_distorted_bounding_box"]
