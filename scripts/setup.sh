#!/usr/bin/env bash
# Installs what gputrace needs to build and test on Debian or Ubuntu (run as
# root): OTF2 (static library, otf2-print, the Python reader), Open MPI and
# MPICH with their Fortran compilers, ViTE (the viewer a test renders an
# archive with), and a Rust toolchain (rustup) when cargo is missing or
# older than the workspace needs. Safe to run again.
set -euo pipefail

packages=(
  build-essential ca-certificates curl pkg-config git
  libopen-trace-format2-dev otf2-tools python3-otf2
  libopenmpi-dev openmpi-bin mpich libmpich-dev gfortran
  binutils vite
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

need_minor=88
have_minor=$( (cargo --version 2>/dev/null || true) | sed -n 's/^cargo 1\.\([0-9]*\).*/\1/p')
if [[ -z "$have_minor" || "$have_minor" -lt "$need_minor" ]]; then
  if ! command -v rustup >/dev/null 2>&1; then
    echo "[setup] installing Rust with rustup"
    curl -sSf https://static.rust-lang.org/rustup/rustup-init.sh | sh -s -- -y --profile minimal --component clippy,rustfmt >/dev/null
  fi
  # shellcheck disable=SC1091
  source "$HOME/.cargo/env"
  rustup toolchain install stable --profile minimal --component clippy,rustfmt >/dev/null
  rustup default stable >/dev/null
fi
