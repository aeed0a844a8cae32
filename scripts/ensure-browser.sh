#!/usr/bin/env bash
# Make headless Chromium available for the browser tests in tests/test_html_report.py.
#
# Idempotent: when /usr/bin/chromium exists it only says so. Otherwise, as root on a
# machine with apt-get, it installs Debian's `chromium` package quietly. Anywhere else it
# explains what to do and fails. GROUNDSTATE_SKIP_BROWSER=1 skips the browser tests and
# this script alike.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ "${GROUNDSTATE_SKIP_BROWSER:-}" = "1" ]; then
  echo "ensure-browser: GROUNDSTATE_SKIP_BROWSER=1, nothing to do (browser tests are skipped)"
  exit 0
fi

if [ -x "$CHROMIUM" ]; then
  echo "ensure-browser: $CHROMIUM is already installed, nothing to do"
  exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-browser: $CHROMIUM is missing and this is not root with apt-get;" \
    "install Debian's chromium package, or set GROUNDSTATE_SKIP_BROWSER=1 to skip the browser tests" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { apt-get update -qq && apt-get install -y -qq chromium; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "ensure-browser: installing chromium with apt-get failed (output above)" >&2
  exit 1
fi
echo "ensure-browser: installed chromium with apt-get ($CHROMIUM)"
