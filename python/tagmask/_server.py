"""The `tagmask serve` process: found, started, shared, restarted once when it dies.

One process serves every Masker of this Python process (per command line); requests go one at a time under
a lock, so a call is one request line out and one response line back (protocol 1, documented in the
repository's README, section *tagmask serve*).
"""
import atexit
import collections
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

from ._errors import NotFound, RequestError, ServerError

PROTOCOL = 1

INSTALL_HINT = (
    "tagmask's Node CLI was not found. Install it with `npm install tagmask` in your project "
    "(or `npm install -g tagmask`; Node 20+ from https://nodejs.org), run from a checkout of the tagmask "
    "repository, or set TAGMASK_CLI to its bin/tagmask.js"
)


def _is_checkout(folder):
    package = folder / "package.json"
    if not (folder / "bin" / "tagmask.js").is_file() or not package.is_file():
        return False
    try:
        return json.loads(package.read_text(encoding="utf-8")).get("name") == "tagmask"
    except (OSError, ValueError):
        return False


def find_cli(cwd=None, here=None, environ=None, path=None):
    """The command that runs the CLI, as an argv list (without `serve`).

    Looked for in this order: TAGMASK_CLI; a repository checkout holding this package or the current folder
    (upwards); node_modules/tagmask from the current folder upwards; `tagmask` on PATH. Raises NotFound
    saying what to install.
    """
    environ = os.environ if environ is None else environ
    cwd = Path(cwd or os.getcwd()).resolve()
    here = Path(here or __file__).resolve().parent

    def node():
        found = environ.get("TAGMASK_NODE") or shutil.which("node", path=path)
        if not found:
            raise NotFound("Node.js was not found (tagmask's CLI runs on Node 20+): install it, or set TAGMASK_NODE to the node binary")
        return found

    named = environ.get("TAGMASK_CLI")
    if named:
        target = Path(named)
        if not target.exists():
            raise NotFound(f"TAGMASK_CLI={named}: no such file. " + INSTALL_HINT)
        if target.suffix in (".js", ".mjs", ".cjs"):
            return [node(), str(target)]
        return [str(target)]
    for start in (here, cwd):
        for folder in (start, *start.parents):
            if _is_checkout(folder):
                return [node(), str(folder / "bin" / "tagmask.js")]
    for folder in (cwd, *cwd.parents):
        installed = folder / "node_modules" / "tagmask" / "bin" / "tagmask.js"
        if installed.is_file():
            return [node(), str(installed)]
    on_path = shutil.which("tagmask", path=path)
    if on_path:
        return [on_path]
    raise NotFound(INSTALL_HINT)


class _Died(Exception):
    """The server process went away mid-request."""


class Server:
    """One `tagmask serve` process and the handles opened on it.

    `generation` counts starts: a handle belongs to the process that opened it, and a Masker re-opens its
    handle when the server was restarted.
    """

    def __init__(self, argv, cwd=None):
        self.argv = list(argv)
        self.cwd = cwd
        self.lock = threading.RLock()
        self.process = None
        self.generation = 0
        self.pid_owner = None
        self._next_id = 0
        self._stderr = collections.deque(maxlen=40)

    # -- process ----------------------------------------------------------------------------------------

    def _start(self):
        try:
            self.process = subprocess.Popen(
                self.argv + ["serve"], cwd=self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as error:
            raise ServerError(f"cannot start tagmask serve ({' '.join(self.argv)}): {error}") from None
        self.pid_owner = os.getpid()
        self.generation += 1
        self._stderr.clear()
        stream, lines = self.process.stderr, self._stderr

        def drain():
            for line in iter(stream.readline, b""):
                lines.append(line.decode("utf-8", "replace").rstrip("\n"))

        threading.Thread(target=drain, name="tagmask-serve-stderr", daemon=True).start()
        version = self._roundtrip({"op": "version"})
        if version.get("protocol") != PROTOCOL:
            self._stop()
            raise ServerError(f"tagmask serve speaks protocol {version.get('protocol')}, this package {PROTOCOL}: install matching versions")
        self.version = version.get("tagmask")

    def _alive(self):
        # After a fork (Ray, multiprocessing) the pipes belong to the parent's server: start our own.
        return self.process is not None and self.pid_owner == os.getpid() and self.process.poll() is None

    def _stop(self):
        process, self.process = self.process, None
        if process is None or self.pid_owner != os.getpid():
            return
        try:
            process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()

    def _ended(self):
        """Why the process is gone, for the exception."""
        process = self.process
        code = process.poll() if process else None
        if code is None and process is not None:
            try:
                code = process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
        said = "\n".join(self._stderr)
        return f"tagmask serve ({' '.join(self.argv)}) exited with {code}" + (f":\n{said}" if said else "")

    # -- requests ---------------------------------------------------------------------------------------

    def _roundtrip(self, request):
        self._next_id += 1
        request = dict(request, id=self._next_id)
        line = json.dumps(request, separators=(",", ":"), default=_plain).encode("utf-8") + b"\n"
        try:
            self.process.stdin.write(line)
            self.process.stdin.flush()
            answer = self.process.stdout.readline()
        except (OSError, ValueError) as error:  # BrokenPipeError, a closed pipe
            raise _Died(self._ended()) from error
        if not answer:
            raise _Died(self._ended())
        response = json.loads(answer)
        if response.get("id") != self._next_id:
            raise ServerError(f"tagmask serve answered request {response.get('id')!r} when {self._next_id} was asked")
        if not response.get("ok"):
            error = response.get("error") or {}
            raise RequestError(error.get("code", "failed"), error.get("message", str(response)))
        return response

    def call(self, masker, request):
        """One request for `masker` (its handle filled in). A server that died (between calls or during this
        one) is started again once and the request sent again; a second death raises ServerError."""
        with self.lock:
            for attempt in (0, 1):
                try:
                    if not self._alive():
                        self._start()
                    if masker is not None:
                        request = dict(request, handle=masker._handle_on(self))
                    return self._roundtrip(request)
                except _Died as died:
                    self.process = None
                    if attempt == 1:
                        raise ServerError(f"{died}\n(started again once already)") from None
            raise AssertionError("unreachable")

    def open(self, grammar, tokenizer, options, format):
        request = {"op": "open", "grammar": grammar, "tokenizer": tokenizer, "options": options}
        if format is not None:
            request["format"] = format
        return self._roundtrip(request)

    def close_handle(self, generation, handle):
        with self.lock:
            if generation == self.generation and self._alive():
                try:
                    self._roundtrip({"op": "close", "handle": handle})
                except (_Died, RequestError):
                    pass

    @property
    def pid(self):
        return self.process.pid if self._alive() else None


def _plain(value):
    """JSON for what json does not know: numpy arrays and scalars, torch tensors (`tolist`), tuples of them."""
    tolist = getattr(value, "tolist", None)
    if tolist is not None:
        return tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"cannot send a {type(value).__name__} to tagmask (expected lists of ints, numpy arrays, torch tensors, dicts)")


_servers = {}
_servers_lock = threading.Lock()


def shared_server(argv=None):
    """The server every Masker of this process shares (one per CLI command line)."""
    argv = tuple(argv or find_cli())
    with _servers_lock:
        server = _servers.get(argv)
        if server is None:
            server = _servers[argv] = Server(argv)
        return server


@atexit.register
def _stop_all():
    for server in list(_servers.values()):
        with server.lock:
            server._stop()
