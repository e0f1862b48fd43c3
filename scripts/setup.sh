#!/usr/bin/env bash
# Installs the Debian packages GTCO needs (only those missing) and builds it into build/.
#   scripts/setup.sh [--tests]   (--tests also installs what the test suite needs and builds
#                                 the tests and benchmarks; without it the four binaries)
#   scripts/setup.sh --deps-only  (installs the packages of a plain build, builds nothing)
# The CUDA path needs no toolkit and no GPU: the headers and libnvrtc come from NVIDIA's
# nvidia-cuda-nvrtc and nvidia-cuda-runtime wheels (PyPI), installed into .deps/cuda; NVRTC is
# loaded at run time and compiles generated kernels for sm_80/sm_90 with no GPU present.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config git python3
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  libsqlite3-dev sqlite3 libpq-dev llvm-15-dev libzstd-dev libxml2-dev libedit-dev zlib1g-dev
  libonnx-dev libcivetweb-dev civetweb libxgboost-dev xgboost libgtest-dev libopenblas-dev curl
  python3-pip libtcmalloc-minimal4 prometheus-cpp-dev nlohmann-json3-dev)
targets=(--target gtco-server gtco-worker gtco-client gtco-run)
if [[ "${1:-}" == "--tests" ]]; then
  # ocl-icd-opencl-dev: Debian's oneDNN CMake config requires OpenCL (only Recommended by
  # libdnnl-dev, so --no-install-recommends left it out and the oneDNN benchmarks unbuilt).
  packages+=(prometheus postgresql libdnnl-dev ocl-icd-opencl-dev python3-matplotlib openssl clang-14 clang-format
    libclang-rt-14-dev systemd python3-numpy python3-torch python3-torchvision python3-onnx python3-venv
    python3-yaml python3-requests python3-packaging python3-typing-extensions
    python3-grpcio python3-protobuf python3-pybind11  # the gtco Python package, built offline
    python3-attr python3-importlib-resources  # kubernetes-validate (.deps/k8s, below)
    chromium)  # the dashboard's browser test (driven by Playwright, below)
  targets=()  # everything, tests included
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "== installing ${#missing[@]} Debian packages: ${missing[*]}"
  as_root=()
  [[ $(id -u) -ne 0 ]] && as_root=(sudo)
  "${as_root[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
fi

# NVRTC and the CUDA headers, pinned to the release of the CUDA toolkit GTCO is tested with.
# pip_into DIR WHEEL...: the pinned wheels (no dependencies resolved: every one is listed) in DIR,
# reinstalled only when the pins changed.
pip_into() {
  local dir=$1
  shift
  if [[ ! -f $dir/installed ]] || [[ "$(cat "$dir/installed")" != "$*" ]]; then
    echo "== installing $* into $dir"
    rm -rf "$dir"
    /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
      --no-deps --target "$dir" "$@"
    echo "$*" >"$dir/installed"
  fi
}

pip_into .deps/cuda nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96

# ONNX Runtime (the reference for exported models' outputs and the speed baseline), pinned with its
# pure-Python dependencies, into .deps/python; numpy comes from Debian.
if [[ "${1:-}" == "--tests" ]]; then
  pip_into .deps/python onnxruntime==1.20.1 coloredlogs==15.0.1 flatbuffers==25.12.19 \
    humanfriendly==10.0 mpmath==1.3.0 packaging==26.4 protobuf==7.36.2 sympy==1.14.0
  # kubernetes-validate (bundles the Kubernetes schemas) for tests/integration/k8s_test.py, with
  # what Debian 12 ships too old (jsonschema 4.10) or not at all; PyYAML, attrs, packaging,
  # typing-extensions and importlib-resources come from Debian.
  pip_into .deps/k8s kubernetes-validate==1.37.0 jsonschema==4.26.0 referencing==0.37.0 \
    jsonschema-specifications==2025.9.1 rpds-py==2026.9.1
  # Hugging Face transformers (BERT exported at test time), the last release that works with
  # Debian's torch 1.13, pinned with its dependencies, into .deps/transformers.
  pip_into .deps/transformers transformers==4.39.3 tokenizers==0.15.2 huggingface-hub==0.36.2 \
    safetensors==0.8.0 regex==2026.11.19 tqdm==4.70.1 filelock==4.3.1 fsspec==2026.9.0 \
    hf-xet==1.8.0
  # onnx 1.16 for ONNX Runtime's quantization tools (quantize_dynamic imports onnx.reference, which
  # Debian's onnx 1.12 lacks): bench/e2e/run_int8.py and tests/data/make_quantized_models.py put
  # .deps/onnx-quant first on PYTHONPATH; everything else keeps Debian's onnx.
  pip_into .deps/onnx-quant onnx==1.16.2
  # Playwright (the dashboard's browser test) with its one dependency, into .deps/playwright; it
  # drives Debian's /usr/bin/chromium (156 checked with Playwright 1.65.2) and downloads no browser.
  pip_into .deps/playwright playwright==1.65.2 greenlet==3.5.6
  # The onnx package's backend node test cases (data only), from the release of Debian's libonnx.
  node_dir=.deps/onnx-node
  onnx_wheel=onnx==1.12.0
  if [[ ! -f $node_dir/installed ]] || [[ "$(cat "$node_dir/installed")" != "$onnx_wheel" ]]; then
    echo "== extracting the ONNX backend node test cases of $onnx_wheel into $node_dir"
    rm -rf "$node_dir" .deps/onnx-wheel
    /usr/bin/python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: --python-version 3.10 --platform manylinux_2_17_x86_64 \
      -d .deps/onnx-wheel "$onnx_wheel"
    /usr/bin/python3 - "$node_dir" .deps/onnx-wheel/*.whl <<'PY'
import os, sys, zipfile
target, wheel = sys.argv[1], sys.argv[2]
prefix = "onnx/backend/test/data/node/"
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            path = os.path.join(target, name[len(prefix):])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as out:
                out.write(archive.read(name))
PY
    rm -rf .deps/onnx-wheel
    echo "$onnx_wheel" >"$node_dir/installed"
  fi
fi

[[ "${1:-}" == "--deps-only" ]] && exit 0

jobs=$(nproc)
echo "== building GTCO (build/, $jobs jobs)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build-configure.log 2>&1 ||
  { cat build-configure.log; exit 1; }
cmake --build build -j"$jobs" "${targets[@]}"
