#!/usr/bin/env bash
# Creates the Python virtual environment that prompt/tests/decoders.rs runs real decoders in, and
# installs requirements.txt into it when something is missing. Idempotent; `.ci/run` calls it.
# The environment goes to $STATECRAFT_DECODER_VENV, or target/decoder-venv in the workspace.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="${STATECRAFT_DECODER_VENV:-$root/target/decoder-venv}"
requirements="$here/requirements.txt"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
# pip's own check is quick when everything pinned is already there.
if ! "$venv/bin/python" -m pip install --disable-pip-version-check --quiet --requirement "$requirements"; then
    echo "cannot install the decoders of $requirements into $venv" >&2
    exit 1
fi
"$venv/bin/python" -c "import llguidance, outlines_core" >/dev/null
echo "decoders ready in $venv"
