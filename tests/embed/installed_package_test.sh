#!/usr/bin/env bash
# examples/embed against the *installed* package: `cmake --install` of this build into a temp
# prefix, then the example configured with find_package(carapace) and built with pkg-config,
# each run on the test guest over KVM (boot, pause, snapshot, restore). Also checks that none of
# our build flags (-Werror, sanitizers) reach an embedder through the exported targets.
# usage: installed_package_test.sh BUILD_DIR SOURCE_DIR TESTGUEST
set -euo pipefail
build=$1 src=$2 guest=$3
tmp=$(mktemp -d /tmp/carapace-embed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "installed_package_test: FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || {
  cat "$tmp/install.log"; fail "cmake --install"; }
config=$(find "$tmp/prefix" -name carapaceConfig.cmake)
[ -n "$config" ] || fail "no carapaceConfig.cmake installed"
[ -x "$tmp/prefix/bin/carapace" ] || fail "the carapace executable is not installed"
[ -f "$tmp/prefix/include/carapace/vmm/embed/carapace.h" ] || fail "vmm/embed/carapace.h missing"
[ -f "$tmp/prefix/include/carapace/carapace/version.h" ] || fail "carapace/version.h missing"
if grep -l -e '-Werror' -e '-fsanitize' "$(dirname "$config")"/carapaceTargets*.cmake; then
  fail "the exported targets carry our build flags"
fi

echo "== find_package(carapace): examples/embed"
cmake -S "$src/examples/embed" -B "$tmp/cmake-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" || {
  cat "$tmp/configure.log"; fail "configuring examples/embed"; }
ninja -C "$tmp/cmake-build" >"$tmp/build.log" || { cat "$tmp/build.log"; fail "building it"; }
mkdir -p "$tmp/run1"
out=$("$tmp/cmake-build/embed_boot" "$guest" "$tmp/run1") || { echo "$out"; fail "embed_boot"; }
echo "$out"
grep -q '^embed: PASS$' <<<"$out" || fail "embed_boot did not pass"

echo "== pkg-config carapace"
pcdir=$(dirname "$(find "$tmp/prefix" -name carapace.pc)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs carapace) || fail "pkg-config carapace"
# shellcheck disable=SC2086
g++ -O1 -o "$tmp/embed_pc" "$src/examples/embed/main.cpp" $flags || fail "g++ with pkg-config flags"
mkdir -p "$tmp/run2"
out=$("$tmp/embed_pc" "$guest" "$tmp/run2") || { echo "$out"; fail "the pkg-config build"; }
echo "$out"
grep -q '^embed: PASS$' <<<"$out" || fail "the pkg-config build did not pass"
echo "installed_package_test: PASS"
