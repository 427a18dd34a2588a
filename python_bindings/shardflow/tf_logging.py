"""TF1's tf.logging on Python's logging module: ``sf.logging.info(...)``,
``sf.logging.set_verbosity(sf.logging.INFO)``, DEBUG/INFO/WARN/ERROR/FATAL.

Messages go to the logger named "shardflow" (TF1's is "tensorflow"). As in TF1, it has no
level of its own until set_verbosity is called, so by default it follows the root logger
(WARNING: info and debug are not shown), and when the root logger has no handler it gets one
of its own writing to stderr, so messages show without logging.basicConfig.

Example::

    sf.logging.set_verbosity(sf.logging.INFO)
    sf.logging.info("step %d: loss %.3f", step, loss)
"""

import logging as _logging
import sys as _sys
import threading as _threading

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
WARNING = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_lock = _threading.Lock()
_logger = None
_counts = {}


def get_logger():
    """The "shardflow" logging.Logger (made, with a stderr handler when the root logger has
    none, on first use)."""
    global _logger
    with _lock:
        if _logger is None:
            logger = _logging.getLogger("shardflow")
            if not _logging.getLogger().handlers and not logger.handlers:
                handler = _logging.StreamHandler(_sys.stderr)
                handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT))
                logger.addHandler(handler)
            _logger = logger
        return _logger


def set_verbosity(v):
    """Shows messages of level `v` (DEBUG, INFO, WARN, ERROR, FATAL) and above."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("set_verbosity takes a level such as sf.logging.INFO, not %r" % (v,))
    get_logger().setLevel(v)


def get_verbosity():
    """The level messages are shown from (the root logger's when none was set)."""
    return get_logger().getEffectiveLevel()


def log(level, msg, *args, **kwargs):
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs):
    get_logger().debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    get_logger().info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    get_logger().warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    get_logger().error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    """Logs at FATAL (CRITICAL) level; as TF1's, it does not exit."""
    get_logger().critical(msg, *args, **kwargs)


def vlog(level, msg, *args, **kwargs):
    """Logs at `level` (TF1's verbose logging is logging at a numeric level)."""
    get_logger().log(level, msg, *args, **kwargs)


def log_if(level, msg, condition, *args):
    """Logs `msg` at `level` when `condition` is true."""
    if condition:
        get_logger().log(level, msg, *args)


def _caller_key():
    frame = _sys._getframe(2)
    return frame.f_code.co_filename, frame.f_lineno


def log_every_n(level, msg, n, *args):
    """Logs `msg` the 1st, (n+1)th, (2n+1)th, ... time this line runs."""
    if n < 1:
        raise ValueError("log_every_n: n must be >= 1, got %r" % (n,))
    key = _caller_key()
    with _lock:
        count = _counts.get(key, 0)
        _counts[key] = count + 1
    log_if(level, msg, count % n == 0, *args)


def log_first_n(level, msg, n, *args):
    """Logs `msg` the first `n` times this line runs."""
    key = _caller_key()
    with _lock:
        count = _counts.get(key, 0)
        _counts[key] = count + 1
    log_if(level, msg, count < n, *args)


def flush():
    """Flushes the handlers of the "shardflow" logger."""
    for handler in get_logger().handlers:
        handler.flush()


__all__ = ["DEBUG", "ERROR", "FATAL", "INFO", "WARN", "WARNING", "debug", "error", "fatal",
           "flush", "get_logger", "get_verbosity", "info", "log", "log_every_n", "log_first_n",
           "log_if", "set_verbosity", "vlog", "warn", "warning"]
