#!/usr/bin/env bash
# Make sure a Chromium is here for the browser tests (tests/browser): the distribution's
# packages `chromium` and `chromium-driver`, installed when missing and run as root. Without
# one the browser tests are skipped, unless CI=true: then this fails (and so would they).
set -u

found() { command -v "${CHROMIUM:-chromium}" >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; }

if ! found && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "installing Chromium (Debian's chromium, chromium-driver) for the browser tests"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; }
fi
if found; then
  exit 0
fi
if [ "${CI:-}" = "true" ]; then
  echo "no Chromium and none could be installed (CI=true requires the browser tests)" >&2
  exit 1
fi
echo "no Chromium: the browser tests will be skipped (apt-get install chromium as root)" >&2
