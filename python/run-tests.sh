#!/usr/bin/env bash
# The Python package's tests (python/tests), in a fresh virtual environment: the package itself (pip install
# ./python) and pytest, numpy, pyarrow and Ray Data from the machine's package index (--retries 0: where only a
# local wheel index is reachable, pip must not spend minutes retrying the public one). Arguments go to pytest.
# A machine without Python 3.9+ (or its venv module) skips them, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
skip() { echo "python/run-tests.sh: $1: the Python package's tests are skipped" >&2; exit 0; }
PYTHON="${PYTHON:-python3}"
command -v "$PYTHON" >/dev/null 2>&1 || skip "no $PYTHON on this machine"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || skip "$("$PYTHON" --version 2>&1) is older than 3.9"
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null || skip "$PYTHON has no venv/ensurepip module (Debian: apt-get install python3-venv)"
if [ -n "${TAGMASK_PYTHON_VENV:-}" ]; then
  venv="$TAGMASK_PYTHON_VENV"
else
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT   # Ray alone is ~1 GB installed
  venv="$scratch/venv"
fi
[ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
"$venv/bin/python" -m pip install --retries 0 --disable-pip-version-check -q pytest numpy pyarrow 'ray[data]' ./python
set +e
"$venv/bin/python" -m pytest python/tests -p no:cacheprovider "$@"
code=$?
set -e
# pytest's exit 5 is "no tests collected": here that means the tests went missing, not that they passed.
if [ "$code" = 5 ]; then echo "python/run-tests.sh: pytest collected no tests from python/tests" >&2; fi
exit "$code"
