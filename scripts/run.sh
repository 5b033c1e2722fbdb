#!/usr/bin/env bash
# Installs Parla into its own virtualenv (.venv, or the active one; see python-env.sh) and starts the
# daemon on the embedded SQLite store. Without arguments it runs the daemon (`parla run`); other
# arguments are a parla command, e.g. `stats`. PYTHON=/path/to/python3 picks the base interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
# The voice loop needs PortAudio; sounddevice's Linux wheels do not bundle it.
if command -v dpkg-query >/dev/null && ! dpkg-query -W -f='${Status}' libportaudio2 2>/dev/null | grep -q "install ok installed"; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libportaudio2 >/dev/null
    else
        echo "note: voice needs PortAudio: sudo apt install libportaudio2" >&2
    fi
fi
user_path=$PATH
source scripts/python-env.sh
parla_python_env ""
parla_on_path "$user_path"
exec "$PARLA_BIN/parla" "${@:-run}"
