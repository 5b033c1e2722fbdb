# Sourced by run.sh and test.sh: picks the Python that Parla runs under and installs Parla into it.
#
# Inside an active virtualenv that one is used. Otherwise Parla gets its own virtualenv, .venv in
# the repository, made once from `${PYTHON:-python3}` and reused: a distribution's Python refuses
# `pip install` outside a virtualenv (PEP 668; Debian and Ubuntu mark theirs EXTERNALLY-MANAGED).
# pip runs again only when pyproject.toml or the extras change; its log goes to a file that is
# printed when it fails, so the output stays readable.
#
# Usage: parla_python_env EXTRAS   (EXTRAS like "" or "[test]"); sets PARLA_PY and PARLA_BIN, and
# PARLA_INSTALLED=1 when pip ran. parla_on_path USER_PATH then makes `parla` a command of the user's.

_parla_fail() {
    echo "parla: $*" >&2
    exit 1
}

# Debian/Ubuntu split venv's ensurepip into python3-venv; without it `python3 -m venv` makes a
# virtualenv without pip.
_parla_ensure_venv_module() {
    local base=$1
    "$base" -c 'import ensurepip, venv' 2>/dev/null && return 0
    local version
    version=$("$base" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "parla: installing python3-venv (this Python's venv module lacks ensurepip)" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv "python${version}-venv" >/dev/null ||
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null ||
            _parla_fail "could not install python3-venv with apt-get"
        "$base" -c 'import ensurepip, venv' 2>/dev/null && return 0
    fi
    _parla_fail "$base cannot make a virtualenv: install python${version}-venv (sudo apt install python3-venv), or activate a virtualenv and run this again"
}

parla_python_env() {
    local extras=$1 root venv
    root=$(pwd)
    if python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)' 2>/dev/null &&
        [[ -z ${PYTHON:-} ]]; then
        PARLA_PY=$(command -v python3)
        venv=$(python3 -c 'import sys; print(sys.prefix)')
    else
        local base=${PYTHON:-python3}
        command -v "$base" >/dev/null || _parla_fail "no $base found: install Python 3.11 or newer"
        "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
            _parla_fail "Parla needs Python 3.11 or newer; $base is $("$base" --version 2>&1)"
        venv=$root/.venv
        # A virtualenv whose interpreter is gone (the base Python was upgraded or removed) is remade.
        if [[ -d $venv ]] && ! "$venv/bin/python" -c '' 2>/dev/null; then
            rm -rf "$venv"
        fi
        if [[ ! -x $venv/bin/python ]]; then
            _parla_ensure_venv_module "$base"
            echo "parla: making a virtualenv in $venv (once)" >&2
            "$base" -m venv "$venv" || {
                rm -rf "$venv"
                _parla_fail "could not make a virtualenv with $base"
            }
        fi
        PARLA_PY=$venv/bin/python
    fi
    PARLA_BIN=$("$PARLA_PY" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
    local stamp=$venv/.parla-installed want
    # The end-of-turn model's file ships in this wheel; its dependencies (Pipecat's framework) are not
    # wanted: Parla only reads the file (see pyproject.toml's turn extra).
    local turn_model=pipecat-ai==1.14.0
    [[ $extras == *test* || $extras == *turn* ]] || turn_model=
    want="$root $extras $turn_model $(cksum <pyproject.toml)"  # cksum is POSIX (macOS has no sha256sum)
    if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]] || [[ ! -x $PARLA_BIN/parla ]]; then
        local log=$venv/.parla-pip.log
        echo "parla: installing Parla$extras into $venv (pip's log: $log)" >&2
        if ! "$PARLA_PY" -m pip install --disable-pip-version-check -e ".$extras" >"$log" 2>&1; then
            cat "$log" >&2
            _parla_fail "pip could not install Parla into $venv (log above, also in $log)"
        fi
        if [[ -n $turn_model ]] &&
            ! "$PARLA_PY" -m pip install --disable-pip-version-check --no-deps "$turn_model" >>"$log" 2>&1; then
            cat "$log" >&2
            _parla_fail "pip could not install the end-of-turn model ($turn_model) into $venv (log above)"
        fi
        echo "$want" >"$stamp"
        PARLA_INSTALLED=1
    fi
    export PATH=$PARLA_BIN:$PATH
}

# Every message and the README say `parla ...`: when USER_PATH (the PATH before this script) finds no
# parla, link it into ~/.local/bin if that folder is on USER_PATH, or else say (once, after an
# install) the line that puts it there.
parla_on_path() {
    local user_path=$1 link_dir=$HOME/.local/bin
    PATH=$user_path command -v parla >/dev/null 2>&1 && return 0
    if [[ ":$user_path:" == *":$link_dir:"* ]]; then
        mkdir -p "$link_dir"
        ln -sf "$PARLA_BIN/parla" "$link_dir/parla"
        echo "parla: linked $link_dir/parla to $PARLA_BIN/parla: \`parla\` now works in any shell" >&2
    elif [[ -n ${PARLA_INSTALLED:-} ]]; then
        echo "parla: to type \`parla\` in any shell, add this line to ~/.bashrc (or your shell's profile):" >&2
        echo "    export PATH=\"$PARLA_BIN:\$PATH\"" >&2
    fi
}
