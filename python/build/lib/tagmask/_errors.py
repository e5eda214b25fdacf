"""Exceptions: each carries what tagmask itself said (its error code, message, diagnostics)."""


class TagmaskError(Exception):
    """Anything tagmask refused or could not do."""


class NotFound(TagmaskError):
    """The Node CLI (or Node itself) is not installed where the package looks; the message says what to install."""


class ServerError(TagmaskError):
    """The `tagmask serve` process could not be started, or died again after one restart."""


class RequestError(TagmaskError):
    """tagmask serve refused a request: `code` is its error code (`open-failed`, `bad-request`, …)."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class RolloutError(TagmaskError):
    """Some rollouts of a batch could not be masked. `failures` lists them (`index` in the batch, `id`,
    `error`: tagmask's message naming the place); `results` holds every result, failures included, in order."""

    def __init__(self, failures, results):
        head = f"{len(failures)} of the rollouts could not be masked"
        lines = [f"  rollout {f.index} (id {f.id!r}): {f.error}" for f in failures[:10]]
        more = [f"  … and {len(failures) - 10} more"] if len(failures) > 10 else []
        super().__init__("\n".join([head + ":", *lines, *more]))
        self.failures = failures
        self.results = results
