#!/usr/bin/env bash
# The install matrix: each wheel in dist/ (built by scripts/wheels.sh unless NO_BUILD=1) goes
# into a fresh venv of its CPython, with cargo off PATH, and the HTTP/WSGI conformance subset
# plus Flask and Django (and h2, the HTTP/2 client of the input tests) run against the installed package (tests/conftest.py starts servers
# with $SLUICEGATE_TEST_PYTHON; python/ is not on sys.path, so the wheel is what is imported).
# The subset has no test of tests/serial.py: it runs in parallel (pytest-xdist, PYTEST_WORKERS
# processes, default 4), its tests spread one by one over them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIST=${DIST:-$ROOT/dist}
VERSIONS=${VERSIONS:-"3.9 3.10 3.11 3.12 3.13"}
SUBSET=(tests/test_http11.py tests/test_environ.py tests/test_app_contract.py
        tests/test_wsgi_input.py tests/test_frameworks.py)
[ "${NO_BUILD:-0}" = 1 ] || scripts/wheels.sh

# PATH without any directory holding cargo or rustc: the install must not need Rust.
NORUST=$(printf '%s' "$PATH" | tr ':' '\n' | while read -r d; do
  [ -x "$d/cargo" ] || [ -x "$d/rustc" ] || printf '%s:' "$d"; done)
NORUST=${NORUST%:}

summary=()
status=0
for v in $VERSIONS; do
  py=$(ls -d "$HOME"/.pyenv/versions/"$v".*/bin/python"$v" 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$py" ]; then echo "test-all: CPython $v not found, skipped" >&2; summary+=("$v skipped"); continue; fi
  tag=cp${v/./}
  # 3.9 has its own wheel; 3.10+ share the abi3 one (scripts/wheels.sh).
  if [ "$v" = 3.9 ]; then abi="$tag-$tag"; else abi="cp310-abi3"; fi
  whl=$(ls "$DIST"/sluicegate-*-"$abi"-*manylinux_2_17_x86_64*.whl 2>/dev/null | head -1 || true)
  [ -n "$whl" ] || { echo "test-all: no $tag wheel in $DIST" >&2; summary+=("$v NO WHEEL"); status=1; continue; }
  venv=$(mktemp -d /tmp/sg-test-$tag-XXXX)
  env PATH="$NORUST" "$py" -m venv "$venv"
  env PATH="$NORUST" "$venv/bin/pip" install --quiet --only-binary sluicegate "$whl" pytest pytest-xdist "flask>=3" "django>=4.2" "h2>=4.1"
  ! env PATH="$venv/bin:$NORUST" sh -c 'command -v cargo' >/dev/null || { echo "cargo still on PATH" >&2; exit 1; }
  log=$venv/pytest.log
  if (cd "$venv" && "$venv/bin/python" -c "import sluicegate, sys; assert 'site-packages' in sluicegate.__file__, sluicegate.__file__") &&
     env PATH="$venv/bin:$NORUST" SLUICEGATE_TEST_PYTHON="$venv/bin/python" \
       "$venv/bin/python" -m pytest -q -p no:cacheprovider -n "${PYTEST_WORKERS:-4}" "${SUBSET[@]}" 2>&1 | tee "$log"; then
    summary+=("$v $(tail -1 "$log")")
  else
    summary+=("$v FAILED: $(tail -1 "$log" 2>/dev/null)"); status=1
  fi
  rm -rf "$venv"
done
printf 'test-all: %s\n' "${summary[@]}"
exit $status
