#!/usr/bin/env bash
# Installs everything the tests need and runs the whole suite: the Python packages into Parla's
# virtualenv (.venv, or the active one; see python-env.sh; Playwright among the test extras), (as root,
# on Debian/Ubuntu) the headless audio stack the voice tests use, chromium for the memory inspector's
# browser tests (Playwright drives the distribution's browser: its own download needs network) and
# Node.js, and the Supabase CLI from npm (pinned in
# tests/peers/supabase_cli) for the migration test; then ruff, mypy, the documentation site and the suite,
# every tier of it (plain `pytest` runs only the fast one: tests/tiers.py). Arguments go to pytest,
# after `--tier all`: `bash scripts/test.sh --tier fast` runs the fast tier alone.
set -euo pipefail
cd "$(dirname "$0")/.."
AUDIO_PACKAGES=(pulseaudio pulseaudio-utils libportaudio2 libasound2-plugins flite)
BROWSER_PACKAGES=(chromium)
missing=()
command -v npm >/dev/null || missing+=(nodejs npm)
for pkg in "${AUDIO_PACKAGES[@]}" "${BROWSER_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "The voice, browser and Supabase CLI tests need: ${missing[*]} (install them with your package manager, as root)" >&2
    fi
fi
if command -v npm >/dev/null && [[ ! -x tests/peers/supabase_cli/node_modules/.bin/supabase ]]; then
    npm install --prefix tests/peers/supabase_cli --no-audit --no-fund --loglevel=error
fi
source scripts/python-env.sh
parla_python_env "[test]"
# Lint, formatting and strict types first: cheap, and a failure there is named before the suite runs.
"$PARLA_PY" -m ruff check --quiet .
"$PARLA_PY" -m ruff format --check --quiet .
"$PARLA_PY" scripts/typecheck.py
# The documentation site, strictly: a link to a missing page or anchor fails here (mkdocs.yml).
NO_MKDOCS_2_WARNING=1 "$PARLA_PY" -m mkdocs build --strict --quiet
exec "$PARLA_PY" -m pytest --tier all "$@"
