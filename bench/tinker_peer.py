"""The merge's peer for `npm run bench`: tinker-cookbook's own trajectory_to_data, run in this process.

    TINKER_COOKBOOK=/path/to/tinker-cookbook python3 bench/tinker_peer.py TRAJECTORIES.json

TINKER_COOKBOOK is a checkout of github.com/thinking-machines-lab/tinker-cookbook (the directory that holds
`tinker_cookbook/`). Nothing of it is copied here: its `rl/data_processing.py`, `supervised/common.py`,
`utils/misc_utils.py` and `exceptions.py` are imported from that path as they are. Needs torch and numpy.

The `tinker` SDK itself cannot be installed on the bench machines (its dependency pyqwest is not in the local
wheel index), so this file declares the few SDK types trajectory_to_data builds, as the SDK declares them
(tinker d595dc2, src/tinker/types/): EncodedTextChunk and ModelInput are frozen pydantic models that forbid
extra fields (StrictBase), TensorData.from_torch holds the tensor's numpy array, Datum is a frozen dataclass.
tinker-cookbook's rl/types.py pulls in chz and the completers, so its Transition and Trajectory (plain
dataclasses) are declared here with the fields data_processing.py reads.

Protocol on stdin, one command per line; each answer is one JSON line on stdout:
    run             -> {"ms": wall milliseconds of trajectory_to_data over every trajectory, one pass}
    dump PATH       -> writes every datum (tokens, target_tokens, logprobs, advantages, mask) to PATH as JSON
    quit
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import types
from dataclasses import dataclass, field
from typing import List, Literal, Optional, Sequence

import numpy as np
import pydantic
import torch


def fail(message: str) -> None:
    print(json.dumps({"error": message}), flush=True)
    sys.exit(2)


root = os.environ.get("TINKER_COOKBOOK")
if not root or not os.path.isfile(os.path.join(root, "tinker_cookbook", "rl", "data_processing.py")):
    fail("TINKER_COOKBOOK must name a tinker-cookbook checkout (the directory holding tinker_cookbook/)")


# ── the tinker SDK's types (declared as at tinker d595dc2) ─────────────────────────────────────────────
class StrictBase(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class EncodedTextChunk(StrictBase):
    tokens: Sequence[int]
    type: Literal["encoded_text"] = "encoded_text"

    @property
    def length(self) -> int:
        return len(self.tokens)


class ModelInput(StrictBase):
    chunks: List[EncodedTextChunk]

    @property
    def length(self) -> int:
        return sum(chunk.length for chunk in self.chunks)

    def to_ints(self) -> List[int]:
        return [token for chunk in self.chunks for token in chunk.tokens]


class TensorData:
    def __init__(self, array: np.ndarray) -> None:
        self._numpy = array

    @classmethod
    def from_torch(cls, tensor: torch.Tensor) -> "TensorData":
        return cls(tensor.contiguous().numpy())

    @property
    def data(self) -> list:
        return self._numpy.flatten().tolist()


@dataclass(frozen=True)
class Datum:
    model_input: ModelInput
    loss_fn_inputs: dict = field(default_factory=dict)


tinker = types.ModuleType("tinker")
tinker.ModelInputChunk = EncodedTextChunk
tinker.EncodedTextChunk = EncodedTextChunk
tinker.ModelInput = ModelInput
tinker.TensorData = TensorData
tinker.Datum = Datum
tinker.types = types.SimpleNamespace(EncodedTextChunk=EncodedTextChunk, ModelInput=ModelInput)
sys.modules["tinker"] = tinker


# ── tinker-cookbook's rl/types.py names that data_processing.py imports ────────────────────────────────
@dataclass
class TokensWithLogprobs:
    tokens: list[int]
    maybe_logprobs: Optional[list[float]]

    @property
    def logprobs(self) -> list[float]:
        if self.maybe_logprobs is None:
            raise ValueError("Logprobs are not available")
        return self.maybe_logprobs


@dataclass
class Transition:
    ob: ModelInput
    ac: TokensWithLogprobs
    reward: float
    episode_done: bool
    metrics: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Trajectory:
    transitions: list[Transition]
    final_ob: ModelInput


def package(name: str, path: Optional[str]) -> types.ModuleType:
    """A package module whose __init__ is not run (tinker_cookbook's pulls in the whole cookbook)."""
    module = types.ModuleType(name)
    module.__path__ = [path] if path else []
    sys.modules[name] = module
    return module


def load(name: str, relative: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, relative))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


package("tinker_cookbook", os.path.join(root, "tinker_cookbook"))
package("tinker_cookbook.rl", None)
package("tinker_cookbook.supervised", None)
package("tinker_cookbook.utils", None)
rl_types = types.ModuleType("tinker_cookbook.rl.types")
rl_types.PARSE_ERROR_MASKED_METRIC_KEY = "parse_error_masked"
rl_types.Trajectory = Trajectory
rl_types.TrajectoryGroup = object
rl_types.Transition = Transition
sys.modules["tinker_cookbook.rl.types"] = rl_types
tokenizer_utils = types.ModuleType("tinker_cookbook.tokenizer_utils")
tokenizer_utils.Tokenizer = object
sys.modules["tinker_cookbook.tokenizer_utils"] = tokenizer_utils
load("tinker_cookbook.exceptions", "tinker_cookbook/exceptions.py")
load("tinker_cookbook.utils.misc_utils", "tinker_cookbook/utils/misc_utils.py")
load("tinker_cookbook.supervised.common", "tinker_cookbook/supervised/common.py")
data_processing = load("tinker_cookbook.rl.data_processing", "tinker_cookbook/rl/data_processing.py")
trajectory_to_data = data_processing.trajectory_to_data


# ── the trajectories, built before anything is timed ───────────────────────────────────────────────────
def read(path: str) -> list[tuple[Trajectory, float]]:
    with open(path) as f:
        lines = json.load(f)
    out = []
    for line in lines:
        transitions = [
            Transition(
                ob=ModelInput(chunks=[EncodedTextChunk(tokens=t["ob"])]),
                ac=TokensWithLogprobs(tokens=t["ac"]["tokens"], maybe_logprobs=t["ac"].get("logprobs")),
                reward=0.0,
                episode_done=False,
                metrics=t.get("metrics", {}),
            )
            for t in line["transitions"]
        ]
        out.append((Trajectory(transitions=transitions, final_ob=ModelInput(chunks=[])), float(line.get("advantage", 1.0))))
    return out


trajectories = read(sys.argv[1])
print(json.dumps({"ready": len(trajectories), "torch": torch.__version__, "numpy": np.__version__}), flush=True)

for command in sys.stdin:
    command = command.strip()
    if command == "run":
        t0 = time.perf_counter()
        for trajectory, advantage in trajectories:
            trajectory_to_data(trajectory, advantage)
        print(json.dumps({"ms": (time.perf_counter() - t0) * 1e3}), flush=True)
    elif command.startswith("dump "):
        out = []
        for trajectory, advantage in trajectories:
            out.append([
                {
                    "tokens": datum.model_input.to_ints(),
                    **{key: value.data for key, value in datum.loss_fn_inputs.items()},
                }
                for datum in trajectory_to_data(trajectory, advantage)
            ])
        with open(command[5:], "w") as f:
            json.dump(out, f)
        print(json.dumps({"dumped": len(out)}), flush=True)
    elif command == "quit":
        break
