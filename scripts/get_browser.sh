#!/usr/bin/env bash
# Installs headless Chromium for the browser tests (tests/test_browser.py) where it can: Debian's `chromium` package,
# as root with apt, as get_data.sh does for Fashion-MNIST. Elsewhere it says how, and the browser tests are skipped
# with the same words; it never fails the bootstrap.
set -uo pipefail
for b in chromium chromium-browser google-chrome; do command -v "$b" >/dev/null && exit 0; done
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "get_browser: installing Debian's chromium (the browser tests)" >&2
  if apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 ||
     { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1; }; then
    exit 0
  fi
fi
echo "get_browser: no Chromium, so the browser tests will be skipped; install it (Debian, as root: apt-get install" \
     "chromium; elsewhere: any chromium or google-chrome on PATH) and run the tests again" >&2
exit 0
