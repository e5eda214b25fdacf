"""On every bundled sample suite, the package gives what the CLI gives: the same masks, spans and diagnostics
from `mask`, the same verdicts from `check` (the CLI, `tagmask mask|check`, run as a user runs it)."""
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

import tagmask
from conftest import cli, json_lines, suites

SUITES = suites()


def _rows(folder):
    rows = []
    for name in ("rollouts.jsonl", "retokenized.jsonl"):
        path = folder / name
        if path.exists():
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


@pytest.fixture(scope="module")
def cli_outputs(tmp_path_factory):
    """Per suite, the CLI's mask and check lines over its rollouts and re-tokenized twins (run side by side)."""
    folder = tmp_path_factory.mktemp("suites")

    def run(suite):
        name, path, grammar, tokenizer, options = suite
        joined = folder / f"{name}.jsonl"
        joined.write_text("".join(json.dumps(row) + "\n" for row in _rows(path)))
        sets = [arg for key, value in options.items() for arg in ("--set", f"{key}={'null' if value is None else value}")]
        common = ["--grammar", grammar, "--tokenizer", tokenizer, *sets, str(joined)]
        masked = cli("mask", *common, check=False)
        if masked.returncode == 2 and "tokenizer not found" in masked.stderr:
            # As `tagmask samples` does: a suite whose tokenizer package is not installed is left out, saying so.
            return name, masked.stderr.strip()
        assert masked.returncode in (0, 1), masked.stderr
        return name, (json_lines(masked.stdout), json_lines(cli("check", *common).stdout))

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(run, SUITES))


def test_every_suite_is_here():
    assert len(SUITES) >= 18
    assert "search-r1-qwen3" in [suite[0] for suite in SUITES]


@pytest.mark.parametrize("suite", SUITES, ids=[suite[0] for suite in SUITES])
def test_masks_and_verdicts_equal_the_cli(suite, cli_outputs):
    name, folder, grammar, tokenizer, options = suite
    rows = _rows(folder)
    if isinstance(cli_outputs[name], str):
        pytest.skip(cli_outputs[name])
    cli_masks, cli_verdicts = cli_outputs[name]
    assert len(cli_masks) == len(rows)
    with tagmask.Masker(grammar, tokenizer, **options) as masker:
        results = masker.mask(rows)
        verdicts = masker.check(rows, errors="return")
    assert [result.id for result in results] == [line["id"] for line in cli_masks]
    for result, line in zip(results, cli_masks):
        assert result.mask == line["mask"], result.id
        assert result.spans == line["spans"], result.id
        assert result.diagnostics == line["diagnostics"], result.id
        assert len(result.mask) == result.spans[-1].end
    assert len(verdicts) == len(cli_verdicts)
    for verdict, line in zip(verdicts, cli_verdicts):
        if isinstance(verdict, tagmask.Failure):  # a rollout with no mask to check fails alike in both
            assert (verdict.id, verdict.error) == (line["id"], line["error"])
            continue
        assert (verdict.id, verdict.agree, verdict.tokens, verdict.shape, verdict.frame, verdict.field) == \
            (line["id"], line["agree"], line["tokens"], line["shape"], line["frame"], line["field"])
        assert verdict.disagreements == line["disagreements"]
        assert verdict.diagnostics == line["diagnostics"]
