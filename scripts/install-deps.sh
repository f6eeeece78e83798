#!/usr/bin/env bash
# Installs profwatch's dependencies from Debian 12 packages. Idempotent; run as
# root (or via sudo).
#   bash scripts/install-deps.sh          what building and running need
#   bash scripts/install-deps.sh --test   that, plus the test toolchain
# It installs packages and nothing else: it never starts, stops or
# reconfigures a service (the tests run their own Prometheus on loopback, on
# a port of their own). `packages` is kept in lockstep with the build stage of
# deploy/docker/Dockerfile (a test checks it).
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  # libraries (see README "Dependencies" for why each is here)
  prometheus-cpp-dev libsimdjson-dev zlib1g-dev libspdlog-dev libfmt-dev
  libexpected-dev libyaml-cpp-dev libisal-dev nlohmann-json3-dev libcli11-dev
  libsqlite3-dev nettle-dev libssl-dev libcrypt-dev libcmark-dev
)
test_packages=(
  # sanitizer + libFuzzer build, formatting, function lengths (ctags)
  clang libclang-rt-14-dev clang-format universal-ctags
  # unit tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # the sqlite3 command-line tool: the nsys benchmark's side-by-side baseline
  sqlite3
  # the real Prometheus server and promtool, python3 for small test helpers
  prometheus python3 python3-yaml gzip procps systemd
  # the web config tests' certificates
  openssl
)

case "${1:-}" in
  "") ;;
  --test) packages+=("${test_packages[@]}") ;;
  *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac

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
# --no-install-recommends keeps the install small; prometheus does not need
# its recommended node-exporter or web assets for the tests.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
