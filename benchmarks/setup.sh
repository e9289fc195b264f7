#!/usr/bin/env bash
# benchmarks/setup.sh — installs everything the benchmark suite needs, idempotently.
#
# Owns: Debian's load tools (wrk, ab, httperf, h2load, nginx, haproxy, tcpdump) and build deps (apache2-dev for
# mod_wsgi, libev-dev for bjoern); benchmarks/.venv with every peer server and matplotlib; and
# benchmarks/.venv-modwsgi, a venv of Debian's own /usr/bin/python3 for mod_wsgi-express, which
# must serve as www-data and www-data cannot read a Python installed under /root.
# Each peer's install outcome (built / failed + the error's last line) is recorded in
# benchmarks/.work/install.json, which run.py copies into every report: a peer that does not
# build is reported, never hidden.
#
# Usage: benchmarks/setup.sh            (safe to re-run; only missing things are installed)
#        FORCE=1 benchmarks/setup.sh    (re-try every peer, including those that failed before)
set -uo pipefail
cd "$(dirname "$0")"
BENCH=$PWD
WORK=$BENCH/.work
VENV=$BENCH/.venv
MODWSGI_VENV=$BENCH/.venv-modwsgi
PY=${PYTHON:-python3.11}
mkdir -p "$WORK/install-logs"

# ---- Debian packages --------------------------------------------------------------------
DEB_PKGS=(wrk apache2-utils httperf nginx tcpdump apache2-bin apache2-dev libev-dev python3-venv python3-dev curl
          postgresql-15 nghttp2-client iproute2 haproxy)  # nghttp2-client: h2load for S15/S17; iproute2: ip, tc for
                                                         # S17c; haproxy: S12's health checks
missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing Debian packages ${missing[*]} and not root; install them by hand" >&2
  else
    echo "setup: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$WORK/install-logs/apt.log" 2>&1 \
      || { echo "setup: apt-get failed, see $WORK/install-logs/apt.log" >&2; tail -3 "$WORK/install-logs/apt.log" >&2; }
    # nginx's Debian package starts a system-wide nginx on port 80; the suite runs its own.
    command -v systemctl >/dev/null && systemctl disable --now nginx >/dev/null 2>&1 || true
    [ -f /run/nginx.pid ] && kill "$(cat /run/nginx.pid)" 2>/dev/null || true
    # Likewise PostgreSQL's package starts a system cluster; S13 runs its own (bench/s13.py).
    command -v systemctl >/dev/null && systemctl disable --now postgresql >/dev/null 2>&1 || true
    command -v pg_ctlcluster >/dev/null && pg_ctlcluster 15 main stop >/dev/null 2>&1 || true
  fi
fi

# ---- the peers' venv (the project's Python, 3.11) ---------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV" || { echo "setup: cannot create $VENV with $PY" >&2; exit 1; }
  "$VENV/bin/pip" install --quiet --upgrade pip
fi
if [ ! -x "$MODWSGI_VENV/bin/python" ]; then
  /usr/bin/python3 -m venv "$MODWSGI_VENV" && "$MODWSGI_VENV/bin/pip" install --quiet --no-cache-dir --upgrade pip
  # www-data must traverse and read it.
  chmod -R a+rX "$MODWSGI_VENV" 2>/dev/null || true
fi

# S13's apps (Django; Flask + SQLAlchemy) in sluicegate's own venv (../.venv, made by ./dev build).
if [ -x "$BENCH/../.venv/bin/python" ]; then
  "$BENCH/../.venv/bin/python" -c "import django, psycopg, flask, sqlalchemy" 2>/dev/null \
    || "$BENCH/../.venv/bin/pip" install --quiet "django>=5.2,<6" "psycopg[binary]>=3.2" "flask>=3" "sqlalchemy>=2" \
    || echo "setup: django/psycopg did not install into ../.venv (S13 will be n/a)" >&2
fi

# h3load, the HTTP/3 load client of S17 (run.py s17, run.py h3-lossy): its own Cargo project.
if command -v cargo >/dev/null && [ ! -x "$BENCH/h3load/target/release/h3load" ]; then
  echo "setup: cargo build --release --manifest-path h3load/Cargo.toml"
  cargo build --release --manifest-path "$BENCH/h3load/Cargo.toml" >"$WORK/install-logs/h3load.log" 2>&1 \
    || echo "setup: h3load did not build, see $WORK/install-logs/h3load.log (S17 needs it)" >&2
fi

# The peers themselves: `run.py install` (bench/install.py) holds the table (pip arguments,
# import check) and records each outcome. Run by the project's Python, not the venv's.
SLUICEGATE_BENCH_NO_REEXEC=1 "$PY" "$BENCH/run.py" install --venv "$VENV" --modwsgi-venv "$MODWSGI_VENV" \
  --record "$WORK/install.json" --logs "$WORK/install-logs" ${FORCE:+--force}
chmod -R a+rX "$MODWSGI_VENV" 2>/dev/null || true
