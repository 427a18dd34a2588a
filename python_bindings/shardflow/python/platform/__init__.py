"""tensorflow.python.platform's modules that TF1 programs import directly: tf_logging
(sf.logging), gfile (sf.gfile), test (sf.test), app (sf.app), flags (sf.flags)."""

from shardflow.python._aliases import alias_module

for _name, _source in (("tf_logging", "logging"), ("gfile", "gfile"), ("test", "test"),
                       ("app", "app"), ("flags", "flags")):
    alias_module(__name__, _name, (_source,))

__all__ = ["tf_logging", "gfile", "test", "app", "flags"]
