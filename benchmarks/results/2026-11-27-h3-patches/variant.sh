#!/usr/bin/env bash
# variant.sh DEST H3_PATCHES [quinn]: the h3 and h3-quinn sources of one measured build, in
# DEST/h3 and DEST/h3-quinn. h3 is the published 0.0.8 from cargo's registry plus the listed
# patches of vendor/patches/h3 (by number, e.g. "0002 0003 0004 0005 0006"). With `quinn`,
# h3-quinn is the published 0.0.10 plus the dropped change (h3-quinn-whole-frame.diff, beside
# this script); without it, h3-quinn is the published crate. Each directory keeps the vendored
# Cargo.toml tables ([workspace], [lints.rust]) so that a path [patch] builds it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../../.." && pwd)
DEST=$1; PATCHES=$2; QUINN=${3:-}
REG=$(ls -d ~/.cargo/registry/src/*/ | head -1)
rm -rf "$DEST" && mkdir -p "$DEST"
cp -a "$REG/h3-0.0.8" "$DEST/h3" && cp -a "$REG/h3-quinn-0.0.10" "$DEST/h3-quinn"
cp "$ROOT/vendor/h3/Cargo.toml" "$DEST/h3/Cargo.toml"
printf '\n[workspace]\n' >> "$DEST/h3-quinn/Cargo.toml"
for n in $PATCHES; do (cd "$DEST/h3" && patch -p1 -s < "$ROOT"/vendor/patches/h3/"$n"-*.patch); done
if [ "$QUINN" = quinn ]; then (cd "$DEST/h3-quinn" && patch -p1 -s < "$HERE/h3-quinn-whole-frame.diff"); fi
