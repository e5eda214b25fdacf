"""Shared set-up: the repository (tests run from a checkout), the CLI as a user runs it, the bundled suites."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "python" / "examples"
NODE_CLI = ["node", str(REPO / "bin" / "tagmask.js")]


def cli(*args, input=None, check=True):
    """Run `tagmask ARGS…` (the Node CLI of this checkout); returns the completed process."""
    run = subprocess.run(NODE_CLI + list(args), cwd=REPO, input=input, capture_output=True, text=True)
    if check and run.returncode not in (0, 1):
        raise AssertionError(f"tagmask {' '.join(args)} exited {run.returncode}: {run.stderr}")
    return run


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def suites():
    """Bundled suites with rollouts: (name, folder, grammar, tokenizer, options), as `tagmask samples` reads suite.json."""
    found = []
    for spec_file in sorted((REPO / "samples").glob("*/suite.json")):
        folder = spec_file.parent
        spec = json.loads(spec_file.read_text())
        if "rollouts" not in spec:
            continue

        def local(value):
            return str(folder / value) if value.startswith(".") or (folder / value).exists() else value

        found.append((folder.name, folder, local(spec["grammar"]), local(spec["tokenizer"]), spec.get("options", {})))
    return found


@pytest.fixture(scope="session", autouse=True)
def _from_repo(tmp_path_factory):
    # Examples and sample paths are relative to the repository, as the README runs them.
    import os

    before = os.getcwd()
    os.chdir(REPO)
    yield
    os.chdir(before)


if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
