#!/usr/bin/env bash
# Installs what gputrace needs to build and test on Debian or Ubuntu (run as
# root): OTF2 (static library, otf2-print, the Python reader and the six
# module it imports but Debian's package does not depend on), Open MPI and
# MPICH with their Fortran compilers, ViTE (the viewer a test renders an
# archive with), and the Rust toolchain pinned in rust-toolchain.toml
# (through rustup, installed if missing), and for the mpi4py tests
# Debian's python3-mpi4py (Open MPI) plus, in a cache directory, the same
# mpi4py version's source distribution (its test suite) and a virtual
# environment with that mpi4py built against MPICH. Safe to run again.
set -euo pipefail

packages=(
  build-essential ca-certificates curl pkg-config git
  libopen-trace-format2-dev otf2-tools python3-otf2 python3-six
  libopenmpi-dev openmpi-bin mpich libmpich-dev gfortran
  binutils vite
  python3-mpi4py python3-venv python3-dev
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
