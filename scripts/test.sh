#!/usr/bin/env bash
# Installs everything the tests need into the current Python and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
exec python3 -m pytest "$@"
