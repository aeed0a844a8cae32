#!/usr/bin/env bash
# Make PostgreSQL's server binaries (initdb, pg_ctl) available for the postgres tests.
#
# groundstate starts its own private server from these binaries (see docs/environments.md);
# nothing has to be running. Idempotent: when initdb is found (GROUNDSTATE_POSTGRES_BIN, PATH
# or /usr/lib/postgresql/*/bin) it only says so. Otherwise, as root on a machine with apt-get,
# it installs Debian's `postgresql` package quietly (which also creates the unprivileged
# `postgres` user a root process runs the server as). Anywhere else it explains what to do
# and fails. GROUNDSTATE_SKIP_POSTGRES=1 skips the postgres tests and this script alike;
# GROUNDSTATE_POSTGRES_URL (an existing server) makes the binaries unnecessary.
set -euo pipefail

if [ "${GROUNDSTATE_SKIP_POSTGRES:-}" = "1" ]; then
  echo "ensure-postgres: GROUNDSTATE_SKIP_POSTGRES=1, nothing to do (postgres tests are skipped)"
  exit 0
fi

if [ -n "${GROUNDSTATE_POSTGRES_URL:-}" ]; then
  echo "ensure-postgres: GROUNDSTATE_POSTGRES_URL is set, the tests use that server"
  exit 0
fi

find_initdb() {
  for dir in "${GROUNDSTATE_POSTGRES_BIN:-}" $(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)") \
    $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

if dir=$(find_initdb); then
  echo "ensure-postgres: initdb and pg_ctl are installed in $dir, nothing to do"
  exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-postgres: initdb/pg_ctl are missing and this is not root with apt-get;" \
    "install PostgreSQL (Debian: postgresql), set GROUNDSTATE_POSTGRES_BIN or GROUNDSTATE_POSTGRES_URL," \
    "or set GROUNDSTATE_SKIP_POSTGRES=1 to skip the postgres tests" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { apt-get update -qq && apt-get install -y -qq postgresql; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "ensure-postgres: installing postgresql with apt-get failed (output above)" >&2
  exit 1
fi
dir=$(find_initdb) || { echo "ensure-postgres: postgresql installed but initdb not found" >&2; exit 1; }
echo "ensure-postgres: installed postgresql with apt-get ($dir)"
