"""tf.keras.preprocessing: sequence (pad_sequences), text (Tokenizer, one_hot, hashing_trick)
and image (ImageDataGenerator), for the NumPy side of a Keras program.

Example::

    from shardflow.keras.preprocessing.sequence import pad_sequences
    x = pad_sequences([[1, 2, 3], [4]], maxlen=3)     # [[1, 2, 3], [0, 0, 4]]
"""

from shardflow.keras.preprocessing import image, sequence, text  # noqa: F401

__all__ = ["image", "sequence", "text"]
