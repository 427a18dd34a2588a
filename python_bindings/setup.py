"""pip install for the shardflow Python package, built by the project's CMake.

    /usr/bin/python3 -m pip install --no-build-isolation --no-deps python_bindings/

builds the `_shardflow` extension (and the engine library) with CMake in $SHARDFLOW_BUILD_DIR
(default: build/ at the repository root, configured if needed; an up-to-date build tree makes this
quick) and installs the package with libshardflow.so beside the extension. Needs Debian's
cmake, ninja-build, pybind11-dev, python3-dev and the engine's build dependencies
(.ci/setup.sh); nothing from PyPI.
"""

import glob
import os
import shutil
import subprocess

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class CMakeBuild(build_ext):
    """Builds the extension with the project's CMake instead of setuptools' compiler."""

    def build_extension(self, ext):
        build = os.environ.get("SHARDFLOW_BUILD_DIR", os.path.join(ROOT, "build"))
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.run(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja",
                            "-DCMAKE_BUILD_TYPE=Release"], check=True)
        jobs = os.environ.get("SHARDFLOW_BUILD_JOBS")
        cmd = ["cmake", "--build", build, "--target", "shardflow_python"]
        if jobs:
            cmd += ["-j", jobs]
        subprocess.run(cmd, check=True)
        built = glob.glob(os.path.join(build, "python", "shardflow", "_shardflow*.so"))
        if not built:
            raise RuntimeError("CMake did not build _shardflow in %s; is pybind11-dev "
                               "installed? (see the CMake output above)" % build)
        dest = os.path.dirname(self.get_ext_fullpath(ext.name))
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(built[0], self.get_ext_fullpath(ext.name))
        for lib in glob.glob(os.path.join(build, "libshardflow.so*")):
            shutil.copy2(lib, dest)  # found through the extension's $ORIGIN rpath


setup(
    name="shardflow",
    version="0.1.0",
    description="Python API of shardflow, a dataflow-graph ML engine",
    # Every subpackage (shardflow.data, .datasets, .distribute, ...).
    packages=find_packages(where=HERE, include=["shardflow", "shardflow.*"]),
    package_dir={"": "."},
    ext_modules=[Extension("shardflow._shardflow", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    zip_safe=False,
)
