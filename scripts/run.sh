#!/usr/bin/env bash
# Installs Parla into the current Python and starts it on the embedded SQLite store.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e .
exec parla "${@:-stats}"
