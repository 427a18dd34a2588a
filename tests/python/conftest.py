"""Makes the build tree's `shardflow` package importable for pytest.

ctest sets PYTHONPATH to <build>/python. Run by hand, pytest looks for the package in
$SHARDFLOW_BUILD_DIR/python, then build/python at the repository root.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _add_build_tree():
    try:
        import shardflow  # noqa: F401
        return
    except ImportError:
        pass
    build = os.environ.get("SHARDFLOW_BUILD_DIR", os.path.join(_ROOT, "build"))
    sys.path.insert(0, os.path.join(build, "python"))


_add_build_tree()
REPO_ROOT = _ROOT


def pytest_sessionstart(session):
    """Exit with 77 (ctest: skipped) when the extension was not built at all."""
    import glob
    import pytest
    try:
        import shardflow  # noqa: F401
    except ImportError as e:
        build = os.environ.get("SHARDFLOW_BUILD_DIR", os.path.join(_ROOT, "build"))
        if not glob.glob(os.path.join(build, "python", "shardflow", "_shardflow*.so")):
            pytest.exit("the Python bindings are not built (apt-get install pybind11-dev "
                        "python3-dev, then rebuild): %s" % e, returncode=77)
        raise
