"""The package installs with `cmake --install` into a prefix and imports from there."""

import os
import shutil
import subprocess
import sys

import pytest

BUILD = os.environ.get("SHARDFLOW_BUILD_DIR")


@pytest.mark.skipif(not BUILD or not shutil.which("cmake"), reason="needs SHARDFLOW_BUILD_DIR")
def test_cmake_install_into_a_prefix(tmp_path):
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(tmp_path),
                    "--component", "python"], check=True, capture_output=True)
    site = tmp_path / "lib" / "python3" / "dist-packages"
    assert (site / "shardflow" / "__init__.py").exists()
    code = ("import numpy as np, shardflow as sf, os; "
            "assert os.path.dirname(sf.__file__).startswith(%r); "
            "x = sf.placeholder(sf.float32, [2]); "
            "import shardflow.data, shardflow.distribute, shardflow.compat.v1; "
            "it = sf.data.Dataset.range(3).batch(2).make_one_shot_iterator().get_next(); "
            "s = sf.Session(); assert s.run(it).tolist() == [0, 1]; "
            "assert s.run(sf.math.floor(sf.constant(1.5))) == 1.0; "
            "print(s.run(x * 3, {x: np.array([1, 2], np.float32)}))" % str(site))
    env = dict(os.environ, PYTHONPATH=str(site))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=str(tmp_path), check=True).stdout
    assert out.strip() == "[3. 6.]"
