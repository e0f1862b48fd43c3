"""Builds the `gtco` Python module: the runtime (runtime/ of this repository: the artifact
format, the executor and the parallel-for pool; no LLVM, gRPC, protobuf or SQLite) bound with
pybind11. Needs Debian's libabsl-dev, libssl-dev and nlohmann-json3-dev (scripts/setup.sh
installs them).

    python3 -m venv --system-site-packages venv && venv/bin/pip install ./runtime/python
"""
import os
import subprocess

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository (this is runtime/python)


def pkg_config_libs(*packages):
    output = subprocess.run(["pkg-config", "--libs", *packages], capture_output=True, text=True,
                            check=True).stdout.split()
    libraries = [flag[2:] for flag in output if flag.startswith("-l")]
    extra = [flag for flag in output if not flag.startswith("-l")]
    return libraries, extra


libraries, extra_link = pkg_config_libs("absl_status", "absl_statusor", "absl_strings")
sources = [os.path.join("runtime", name) for name in ("artifact.cc", "model.cc", "parallel.cc")]
# setuptools wants sources relative to setup.py's directory: build from the repository root.
module = Pybind11Extension(
    "gtco",
    [os.path.relpath(os.path.join(ROOT, source), HERE) for source in sources] + ["gtco_module.cc"],
    include_dirs=[ROOT],
    libraries=libraries + ["crypto", "dl"],
    extra_link_args=extra_link,
    cxx_std=17,
)

setup(ext_modules=[module], cmdclass={"build_ext": build_ext})
