#!/usr/bin/env bash
# Installs what gputrace needs to build and test on Debian or Ubuntu (run as
# root): OTF2 (static library, otf2-print, the Python reader and the six
# module it imports but Debian's package does not depend on), Open MPI and
# MPICH with their Fortran compilers, ViTE (the viewer a test renders an
# archive with), and the Rust toolchain pinned in rust-toolchain.toml
# (through rustup, installed if missing), and for the mpi4py tests
# Debian's python3-mpi4py (Open MPI) plus, in a cache directory, the same
# mpi4py version's source distribution (its test suite) and a virtual
# environment with that mpi4py built against MPICH, and the libcupti of
# NVIDIA's CUPTI wheels for CUDA 12 and 13 (cupti-sys's test of real
# libraries; no GPU needed), and pycubexr (the reader the Cube profile
# tests use) in a virtual environment there, and a one-node Slurm
# (munge, slurmctld, slurmd, started by scripts/slurm.sh) for the tests
# under srun. Safe to run again.
set -euo pipefail

packages=(
  build-essential ca-certificates curl pkg-config git
  libopen-trace-format2-dev otf2-tools python3-otf2 python3-six
  libopenmpi-dev openmpi-bin mpich libmpich-dev gfortran
  binutils vite
  python3-mpi4py python3-venv python3-dev
  munge slurmctld slurmd slurm-client
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The toolchain pinned in rust-toolchain.toml, through rustup (its cargo
# proxy picks the pinned version inside the repository).
toolchain=$(sed -n 's/^channel = "\(.*\)"$/\1/p' rust-toolchain.toml)
if [[ ! -x "$HOME/.cargo/bin/rustup" ]] && ! command -v rustup >/dev/null 2>&1; then
  echo "[setup] installing rustup"
  curl -sSf https://static.rust-lang.org/rustup/rustup-init.sh |
    sh -s -- -y --profile minimal --default-toolchain none >/dev/null
fi
if [[ -f "$HOME/.cargo/env" ]]; then
  # shellcheck disable=SC1091
  source "$HOME/.cargo/env"
fi
if ! rustup toolchain list | grep -q "^$toolchain-"; then
  echo "[setup] installing Rust $toolchain"
  rustup toolchain install "$toolchain" --profile minimal --component clippy,rustfmt
fi
rustup component add --toolchain "$toolchain" clippy rustfmt 2>/dev/null ||
  { echo "[setup] cannot add clippy and rustfmt to Rust $toolchain" >&2; exit 1; }

# mpi4py for the tests (crates/gputrace/tests/integration/mpi4py.rs): the
# source distribution of the version Debian ships, for its test suite, and
# that version built against MPICH in a virtual environment (Debian's is
# built against Open MPI). Built once (about a minute), then reused.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gputrace-tests"
mpi4py_version=$(dpkg-query -W -f='${Version}' python3-mpi4py | sed 's/-.*//')
sdist="$cache/mpi4py-$mpi4py_version.tar.gz"
venv="$cache/mpi4py-mpich"
mkdir -p "$cache"
if [[ ! -x "$venv/bin/pip" ]]; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
fi
if [[ ! -d "$cache/mpi4py-$mpi4py_version/test" ]]; then
  echo "[setup] downloading mpi4py $mpi4py_version (source)"
  "$venv/bin/pip" download -q --no-binary :all: --no-deps -d "$cache" "mpi4py==$mpi4py_version"
  tar -xzf "$sdist" -C "$cache"
fi
if ! "$venv/bin/python" -c "import mpi4py, sys; sys.exit(mpi4py.__version__ != '$mpi4py_version')" 2>/dev/null; then
  echo "[setup] building mpi4py $mpi4py_version against MPICH in $venv"
  "$venv/bin/pip" install -q "wheel==0.45.1"
  MPICC=mpicc.mpich "$venv/bin/pip" install -q --no-deps --no-build-isolation "$sdist"
fi

# Real CUPTI libraries for crates/sys/cupti-sys/tests/real_libraries.rs:
# libcupti of NVIDIA's wheels for CUDA 12 and 13, which load and answer
# cuptiGetVersion without a GPU or a driver. The list goes to
# $cache/cupti/test-libs, which scripts/test.sh exports as
# CUPTI_SYS_TEST_LIBS (path=expected release, ';'-separated).
cupti="$cache/cupti"
list=""
for spec in "nvidia-cuda-cupti-cu12 12.9.79 12 12.9" "nvidia-cuda-cupti 13.0.85 13 13.0"; do
  read -r package version major release <<<"$spec"
  lib="$cupti/$version/libcupti.so.$major"
  if [[ ! -f "$lib" ]]; then
    echo "[setup] downloading CUPTI $version ($package)"
    wheels=$(mktemp -d)
    "$venv/bin/pip" download -q --no-deps --only-binary :all: -d "$wheels" "$package==$version"
    mkdir -p "$cupti/$version"
    "$venv/bin/python" - "$wheels" "$lib" <<'PY'
import pathlib, shutil, sys, zipfile
wheels, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
(wheel,) = wheels.glob("*.whl")
with zipfile.ZipFile(wheel) as z:
    (name,) = [n for n in z.namelist() if n.endswith("/lib/" + target.name)]
    with z.open(name) as src, open(f"{target}.part", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
    mv "$lib.part" "$lib"
    rm -rf "$wheels"
  fi
  list+="$lib=$release;"
done
echo "$list" >"$cupti/test-libs"

# NVTX for crates/gputrace/tests/integration/nvtx.rs: the NVTX v3 headers
# (include/nvtx3, header-only) of NVIDIA's nvidia-nvtx-cu12 wheel, which
# the C test program compiles against, and a virtual environment with the
# Python `nvtx` package (its wheel carries its own compiled NVTX).
nvtx_headers="$cache/nvtx/12.9.79"
if [[ ! -f "$nvtx_headers/include/nvtx3/nvToolsExt.h" ]]; then
  echo "[setup] downloading the NVTX headers (nvidia-nvtx-cu12 12.9.79)"
  wheels=$(mktemp -d)
  "$venv/bin/pip" download -q --no-deps --only-binary :all: -d "$wheels" "nvidia-nvtx-cu12==12.9.79"
  rm -rf "$nvtx_headers.part"
  mkdir -p "$nvtx_headers.part"
  "$venv/bin/python" - "$wheels" "$nvtx_headers.part" <<'PY'
import pathlib, sys, zipfile
wheels, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
(wheel,) = wheels.glob("*.whl")
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if "/include/nvtx3/" in name and not name.endswith("/"):
            out = target / "include" / name.split("/include/", 1)[1]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(z.read(name))
PY
  rm -rf "$nvtx_headers" "$wheels"
  mv "$nvtx_headers.part" "$nvtx_headers"
fi
nvtx_venv="$cache/nvtx-python"
if ! "$nvtx_venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('nvtx') != '0.2.16')" 2>/dev/null; then
  echo "[setup] installing the Python nvtx package 0.2.16 in $nvtx_venv"
  rm -rf "$nvtx_venv"
  /usr/bin/python3 -m venv "$nvtx_venv"
  "$nvtx_venv/bin/pip" install -q --only-binary :all: "nvtx==0.2.16"
fi

# pycubexr, the Extra-P project's reader of Cube profiles, for the tests
# of profile.cubex (crates/gputrace/tests/integration/profile.rs), with the
# numpy it needs, in its own virtual environment (no package of Debian's
# is touched).
pycubexr_venv="$cache/pycubexr"
if ! "$pycubexr_venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('pycubexr') != '2.1.1')" 2>/dev/null; then
  echo "[setup] installing pycubexr 2.1.1 in $pycubexr_venv"
  rm -rf "$pycubexr_venv"
  /usr/bin/python3 -m venv "$pycubexr_venv"
  "$pycubexr_venv/bin/pip" install -q --only-binary :all: "pycubexr==2.1.1"
fi

# A one-node Slurm for crates/gputrace/tests/integration/slurm.rs (the
# tests start it too, where it is installed but not running).
./scripts/slurm.sh || echo "[setup] Slurm was not started: the tests under srun fail under CI=true" >&2
