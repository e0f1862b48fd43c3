"""Builds the `gtco` Python package, one `import gtco` for a team:

  gtco._runtime  the runtime (runtime/ of this repository: the artifact format, the executor and
                 the parallel-for pool; no LLVM, gRPC, protobuf or SQLite) bound with pybind11:
                 gtco.load, gtco.Model
  gtco.v1        the gRPC stubs of proto/gtco/v1/gtco.proto, generated here at build time
  gtco.client    gtco.Client and its errors over those stubs (grpcio + protobuf: the `client`
                 extra, imported only when used, so running artifacts needs neither)

Needs Debian's libabsl-dev, libssl-dev and nlohmann-json3-dev for the runtime, protobuf-compiler
and protobuf-compiler-grpc (or a pip grpcio-tools) for the stubs (scripts/setup.sh installs them):

    python3 -m venv --system-site-packages venv && venv/bin/pip install ./runtime/python
"""
import glob
import os
import re
import shutil
import subprocess
import sys

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # the repository (this is runtime/python)
PROTO_DIR = os.path.join(ROOT, "proto")
PROTO_FILE = os.path.join("gtco", "v1", "gtco.proto")  # package gtco.v1 -> module gtco.v1.gtco_pb2

# Oldest generated-code level the stubs may have: protoc 3.20 was the first to emit the
# builder-style _pb2.py that protobuf's upb runtime (pip protobuf >= 4.21) accepts; older output
# ("Descriptors cannot be created directly") only loads under the C++ or pure-Python runtime.
MIN_GENCODE_LEVEL = 20


def pkg_config_libs(*packages):
    output = subprocess.run(["pkg-config", "--libs", *packages], capture_output=True, text=True,
                            check=True).stdout.split()
    libraries = [flag[2:] for flag in output if flag.startswith("-l")]
    extra = [flag for flag in output if not flag.startswith("-l")]
    return libraries, extra


def gencode_level(version_text):
    """protoc's `--version` ("libprotoc 3.21.12", "libprotoc 25.1") -> the protobuf release series
    its output belongs to (21, 25), the same number as the minor version of the Python runtime of
    that series (4.21.12, 4.25.1); None when unreadable."""
    match = re.search(r"libprotoc (\d+)\.(\d+)", version_text)
    if not match:
        return None
    major, minor = int(match.group(1)), int(match.group(2))
    return minor if major == 3 else major


def first_line(text):
    return text.strip().splitlines()[0] if text.strip() else ""


def runtime_level():
    """The series of the protobuf runtime this build's interpreter imports first (4.21.12 -> 21,
    7.36.2 -> 36), or None when it has none (an isolated build environment)."""
    try:
        import google.protobuf
    except ImportError:
        return None
    parts = google.protobuf.__version__.split(".")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def stub_generators():
    """Every usable stub compiler as (level, description, protoc command): grpcio-tools' bundled
    protoc, and the `protoc` on PATH with gRPC's `grpc_python_plugin` (Debian's
    protobuf-compiler + protobuf-compiler-grpc, the compiler the C++ build uses for proto/)."""
    found = []
    try:
        import grpc_tools  # noqa: F401  (pip's grpcio-tools, or Debian's python3-grpc-tools)
        command = [sys.executable, "-m", "grpc_tools.protoc"]
        version = first_line(subprocess.run(command + ["--version"], capture_output=True,
                                            text=True).stdout)
        found.append((gencode_level(version), f"grpcio-tools ({version})", command))
    except ImportError:
        pass
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    plugin = shutil.which("grpc_python_plugin")
    if protoc and plugin:
        version = first_line(subprocess.run([protoc, "--version"], capture_output=True,
                                            text=True).stdout)
        found.append((gencode_level(version), f"{protoc} ({version}) + {plugin}",
                      [protoc, f"--plugin=protoc-gen-grpc_python={plugin}"]))
    return found


def choose_stub_generator():
    """The oldest compiler whose output today's protobuf runtimes load (level >= 20) and that is
    not newer than the runtime this interpreter imports: its stubs load under the widest range
    of runtimes (protoc 3.21's under Debian's protobuf 4.21 and pip's 7.x alike)."""
    runtime = runtime_level()
    candidates = stub_generators()
    usable = [c for c in candidates if c[0] is not None and c[0] >= MIN_GENCODE_LEVEL and
              (runtime is None or c[0] <= runtime)]
    if not usable:
        seen = "; ".join(f"{c[1]}: series {c[0]}" for c in candidates) or "none found"
        sys.exit(f"gtco: no protobuf compiler can generate the gRPC stubs of {PROTO_FILE} "
                 f"(needs protoc >= 3.{MIN_GENCODE_LEVEL} with grpc_python_plugin, or a pip "
                 f"grpcio-tools, not newer than the protobuf runtime "
                 f"{'series ' + str(runtime) if runtime else '(none importable)'}; "
                 f"Debian: apt-get install protobuf-compiler protobuf-compiler-grpc); {seen}")
    return min(usable, key=lambda c: c[0])


def generate_stubs(build_lib):
    """Writes gtco/v1/gtco_pb2.py, .pyi and gtco_pb2_grpc.py under `build_lib` from proto/."""
    level, description, command = choose_stub_generator()
    print(f"gtco: generating the gRPC stubs of {PROTO_FILE} with {description}")
    subprocess.run(command + [f"-I{PROTO_DIR}", f"--python_out={build_lib}",
                              f"--pyi_out={build_lib}", f"--grpc_python_out={build_lib}",
                              os.path.join(PROTO_DIR, PROTO_FILE)], check=True)


class BuildPyWithStubs(build_py):
    """build_py, then the stubs generated into the package being built (never the source tree:
    nothing generated is committed)."""

    def run(self):
        super().run()
        # An in-tree build of the earlier layout (the runtime as a top-level module `gtco`) left
        # gtco.*.so beside the package: it must not ride along into this wheel.
        for stale in glob.glob(os.path.join(self.build_lib, "gtco.*.so")):
            os.remove(stale)
        generate_stubs(self.build_lib)


libraries, extra_link = pkg_config_libs("absl_status", "absl_statusor", "absl_strings")
sources = [os.path.join("runtime", name)
           for name in ("artifact.cc", "model.cc", "parallel.cc", "quantize.cc", "reference_step.cc")]
# The reference op library (fallback steps), one file per op family.
sources += sorted(os.path.relpath(path, ROOT)
                  for path in glob.glob(os.path.join(ROOT, "runtime", "reference_ops*.cc")))
# setuptools wants sources relative to setup.py's directory: build from the repository root.
module = Pybind11Extension(
    "gtco._runtime",
    [os.path.relpath(os.path.join(ROOT, source), HERE) for source in sources] + ["gtco_module.cc"],
    include_dirs=[ROOT],
    libraries=libraries + ["crypto", "dl"],
    extra_link_args=extra_link,
    cxx_std=17,
)

setup(
    packages=["gtco", "gtco.v1"],
    package_data={"gtco": ["py.typed", "*.pyi"]},
    ext_modules=[module],
    cmdclass={"build_ext": build_ext, "build_py": BuildPyWithStubs},
)
