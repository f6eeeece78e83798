#!/usr/bin/env bash
# Installs every build, test and runtime dependency of profwatch from Debian 12
# packages. Idempotent; run as root (or via sudo). Kept in lockstep with
# deploy/docker/Dockerfile.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  clang libclang-rt-14-dev clang-format
  # libraries (see README "Dependencies" for why each is here)
  prometheus-cpp-dev libsimdjson-dev zlib1g-dev libspdlog-dev libfmt-dev
  libexpected-dev libyaml-cpp-dev libisal-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # tests: the real Prometheus server and promtool, python3 for tiny helpers
  prometheus python3 python3-yaml gzip procps systemd
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --no-install-recommends keeps the image small; prometheus does not need its
# recommended node-exporter or web assets for our use.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The Debian prometheus package starts a system service on install where an
# init system runs; profwatch's tests start their own instance on loopback.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  $SUDO systemctl stop prometheus || true
fi
echo "install-deps: installed ${missing[*]}"
