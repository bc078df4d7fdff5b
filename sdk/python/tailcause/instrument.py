# SPDX-License-Identifier: MIT
"""Auto-instrumentation: runs a Python agent unchanged with its libraries' calls as tailcause
stages, the way OpenTelemetry's `opentelemetry-instrument` does it for traces.

    python3 -m tailcause.instrument [OPTIONS] agent.py ARGS...
    python3 -m tailcause.instrument [OPTIONS] -m package.module ARGS...
    tailcause instrument [OPTIONS] -- python3 agent.py ARGS...      (the same, from the CLI)

What becomes a stage (each only at the top level of a thread: a stage inside a stage is part
of it), wrapped as the library is imported (or at once when it already is):
  faiss        Index*.search / range_search                         retrieval
  torch        nn.Module calls (the outermost module call only)     embedding when called from
               a function whose name says embed/encode, else generation; within a request,
               consecutive calls from one function are one stage (below)
  urllib       OpenerDirector.open (urlopen)                        tool
  http.client  HTTPConnection.request / getresponse                 tool
  requests     Session.request                                      tool
  httpx        Client.send / AsyncClient.send                       tool
  openai       chat.completions.create, completions.create          generation
  anthropic    messages.create                                      generation

The request boundary: --entry FUNC (a function the script defines, or MODULE:FUNC), each call
of it one request; --wsgi MODULE:APP / --asgi MODULE:APP, each HTTP request one request.
Without either, each top-level stage is its own request. The tenant: --tenant-arg NAME (the
entry function's argument of that name), --tenant-header NAME (WSGI/ASGI request header),
--tenant-env VAR (the process's environment), else $TAILCAUSE_TENANT, else the script's name.
The agent name: --agent, else the script's name.

Options may also come from the environment (what `tailcause instrument` sets):
TAILCAUSE_INSTRUMENT_ENTRY, _WSGI, _ASGI, _TENANT_ARG, _TENANT_HEADER, _TENANT_ENV, _AGENT.

Cost: nothing unless run this way. Run this way with no tracer attached, each wrapped call
costs a thread-local lookup and the SDK's semaphore reads; with the daemon attached each stage
costs one probe (measured by tests/zerocode/bench.sh), several microseconds on a virtual
machine. That is why a stage lingers: within a request it ends where the thread's next stage
begins or where the request ends, by the probe that begins that stage or ends the request
(TAILCAUSE_STAGE_FOLLOWS, sdk.h), so the Python after its call is part of it (a tool's response
body read after urlopen returns; sampling and the next token's tensor in a decoding loop). A
call that raises ends its stage there. And a function's consecutive top-level module calls of one
kind (a decoding loop: token embedding, decoder, head, per token) are one stage: it opens at
the first call, and a module call from another function or of the other kind begins the next.
Async library calls (httpx's AsyncClient) end their stage when they return: other coroutines
of the thread may run next. Outside a request each stage is its own request.
"""

import ast
import functools
import importlib.abc
import importlib.util
import inspect
import os
import runpy
import sys
import threading

import tailcause
from tailcause import _native


class _ThreadState(threading.local):
    """Per thread, with class defaults so that a read is one attribute lookup (the torch hook
    reads `depth` on every submodule call)."""
    request = None  # the id of the thread's request
    depth = 0  # stages open on the thread
    # The stage left open after its call: (request id, calling code, stage kind); the code is
    # None for a wrapped library call's, which no module call continues.
    linger = None


_state = _ThreadState()
_settings = {}


# ---- stages and requests -----------------------------------------------------------------------
#
# The wrappers call the library's probes themselves rather than through tailcause.Request and
# Stage: between an agent's model kernels this Python runs cold, and every frame it enters costs
# microseconds there (docs/recipes.md). What they pass needs no checks (stage kinds are our own
# constants, names are checked once), and a request on a thread is held as its id.

_probes = _native.probes
_S_REQUEST_BEGIN = _native.semaphores["request_begin"]
_S_REQUEST_END = _native.semaphores["request_end"]
_S_STAGE_BEGIN = _native.semaphores["stage_begin"]
_S_STAGE_END = _native.semaphores["stage_end"]
_STAGE_NAMES_C = tuple(n.encode() for n in tailcause.Stage.NAMES)
# TAILCAUSE_STAGE_FOLLOWS (sdk.h), or'ed into a stage_begin's kind: the thread's open stage of
# the request ends where the new one begins. A lingering stage so ends without a probe of its
# own, and one still open when its request ends ends with request_end.
_STAGE_FOLLOWS = 0x100
_c_strings = tailcause._c_strings  # names already checked, as the probes' bytes
_next_request_id = tailcause._next_request_id


def _tenant_default():
    if _settings.get("tenant_env"):
        v = os.environ.get(_settings["tenant_env"])
        if v:
            return v
    return os.environ.get("TAILCAUSE_TENANT") or _settings.get("name", "python")


def _agent():
    return _settings.get("agent") or _settings.get("name", "python")


def _begin_request(state, tenant):
    """Opens a request of `tenant` (any object: its str) on this thread, which has none."""
    tenant_c = _c_strings.get(tenant) if type(tenant) is str else None
    if tenant_c is None:
        tenant_c = tailcause._c_string(str(tenant), "tenant")
    agent = _agent()
    agent_c = _c_strings.get(agent)
    if agent_c is None:
        agent_c = tailcause._c_string(agent, "agent")
    rid = state.request = _next_request_id()
    if _S_REQUEST_BEGIN.value:
        _probes.request_begin(rid, tenant_c, agent_c, None)


def _end_request(state, failed):
    state.linger = None  # its stage ends with the request
    rid, state.request = state.request, None
    if _S_REQUEST_END.value:
        _probes.request_end(rid, 1 if failed else 0)


def _run_request(state, tenant, fn, args, kwargs):
    """fn(*args, **kwargs) as one request of `tenant`, or as part of the thread's request when
    one is open (a nested entry call joins the outer request)."""
    if state.request is not None:
        return fn(*args, **kwargs)
    _begin_request(state, tenant)
    failed = True
    try:
        result = fn(*args, **kwargs)
        failed = False
        return result
    finally:
        _end_request(state, failed)


async def _run_request_async(state, tenant, fn, args, kwargs):
    """_run_request for a coroutine function."""
    if state.request is not None:
        return await fn(*args, **kwargs)
    _begin_request(state, tenant)
    failed = True
    try:
        result = await fn(*args, **kwargs)
        failed = False
        return result
    finally:
        _end_request(state, failed)


def _end_linger():
    """Ends the thread's lingering stage, if any."""
    linger = _state.linger
    if linger is not None:
        _state.linger = None
        if _S_STAGE_END.value:
            _probes.stage_end(linger[0], linger[2])


def _staged(fn, kind):
    """`fn` as a stage of `kind` (a Stage constant). Only a thread's outermost wrapped call is
    a stage (depth 0); outside a request the call becomes a request of its own (the wrapper
    runs again inside it)."""
    if getattr(fn, "__tailcause_wrapped__", False):
        return fn
    name_c = _STAGE_NAMES_C[kind]

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_wrapper(*args, **kwargs):
            state = _state
            if state.depth:
                return await fn(*args, **kwargs)
            rid = state.request
            if rid is None:
                return await _run_request_async(state, _tenant_default(), async_wrapper, args,
                                                kwargs)
            follows = 0
            if state.linger is not None:  # the lingering stage ends where this one begins
                state.linger = None
                follows = _STAGE_FOLLOWS
            state.depth = 1
            if _S_STAGE_BEGIN.value:
                _probes.stage_begin(rid, kind | follows, name_c)
            try:
                return await fn(*args, **kwargs)
            finally:
                state.depth = 0
                if _S_STAGE_END.value:
                    _probes.stage_end(rid, kind)
        async_wrapper.__tailcause_wrapped__ = True
        return async_wrapper

    # The stage lingers after the call, as a module call's does: it ends where the thread's
    # next stage begins or with the request, so what the caller does with the result (a tool's
    # response body read after urlopen returns, a streamed completion iterated after create()
    # returns) is part of it, and the call costs one probe. A call that fails ends it.
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        state = _state
        if state.depth:  # inside a stage already: the fast path
            return fn(*args, **kwargs)
        rid = state.request
        if rid is None:
            return _run_request(state, _tenant_default(), wrapper, args, kwargs)
        if _S_STAGE_BEGIN.value:  # following the lingering stage, if any, ends it
            _probes.stage_begin(rid, kind if state.linger is None else kind | _STAGE_FOLLOWS,
                                name_c)
        state.linger = (rid, None, kind)  # no calling code: a module call begins its own
        state.depth = 1
        try:
            return fn(*args, **kwargs)
        except BaseException:
            _end_linger()
            raise
        finally:
            state.depth = 0
    wrapper.__tailcause_wrapped__ = True
    return wrapper


def _patch(owner, name, kind):
    fn = getattr(owner, name, None)
    if fn is not None and callable(fn):
        setattr(owner, name, _staged(fn, kind))


def _positional_index(fn, name):
    """The position `name` takes when passed positionally to `fn`, or None (keyword-only, or
    not a parameter): read once, so a request costs no signature binding."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    for i, p in enumerate(parameters):
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            return None
        if p.name == name:
            return i
    return None


def wrap_entry(fn):
    """Each call of `fn` is one request; the tenant from its --tenant-arg argument."""
    arg = _settings.get("tenant_arg")
    position = _positional_index(fn, arg) if arg else None

    def tenant_of(args, kwargs):
        if arg:
            if arg in kwargs:
                return kwargs[arg]
            if position is not None and position < len(args):
                return args[position]
        return _tenant_default()

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_entry(*args, **kwargs):
            return await _run_request_async(_state, tenant_of(args, kwargs), fn, args, kwargs)
        return async_entry

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        state = _state
        if state.request is not None:  # a nested entry call joins the outer request
            return fn(*args, **kwargs)
        return _run_request(state, tenant_of(args, kwargs), fn, args, kwargs)
    return entry


def wrap_wsgi(app):
    header = "HTTP_" + (_settings.get("tenant_header") or "X-Tenant").upper().replace("-", "_")

    @functools.wraps(app)
    def wsgi(environ, start_response):
        # A streamed body ends outside the request.
        return _run_request(_state, environ.get(header) or _tenant_default(), app,
                            (environ, start_response), {})
    return wsgi


def wrap_asgi(app):
    header = (_settings.get("tenant_header") or "x-tenant").lower().encode("latin-1")

    async def asgi(scope, receive, send):
        if scope.get("type") != "http":
            return await app(scope, receive, send)
        tenant = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == header),
                      None)
        return await _run_request_async(_state, tenant or _tenant_default(), app,
                                        (scope, receive, send), {})
    return asgi


# ---- the libraries --------------------------------------------------------------------------

def _instrument_torch(torch):
    module = torch.nn.Module
    call = module.__call__
    if getattr(call, "__tailcause_wrapped__", False):
        return

    kinds = {}  # calling code object -> stage kind, from the function's name (read once)

    def kind_of(code):  # on a miss in kinds
        if len(kinds) >= 4096:  # code made at run time (exec, lambdas) must not pile up
            kinds.clear()
        name = code.co_name.lower()
        kind = kinds[code] = (tailcause.Stage.EMBEDDING if "embed" in name or "encode" in name
                              else tailcause.Stage.GENERATION)
        return kind

    @functools.wraps(call)
    def module_call(self, *args, **kwargs):
        state = _state
        if state.depth:  # a submodule: part of the outer module's stage
            return call(self, *args, **kwargs)
        code = sys._getframe(1).f_code
        kind = kinds.get(code)
        if kind is None:
            kind = kind_of(code)
        rid = state.request
        if rid is None:  # no request to hold a lingering stage: the call is a request
            return _run_request(state, _tenant_default(), module_call, (self,) + args, kwargs)
        linger = state.linger
        if linger is None or linger[1] is not code:  # the same code: the same kind, stage
            if _S_STAGE_BEGIN.value:  # following the lingering stage, if any, ends it
                _probes.stage_begin(rid, kind if linger is None else kind | _STAGE_FOLLOWS,
                                    _STAGE_NAMES_C[kind])
            state.linger = (rid, code, kind)  # the C hook reads [1]
        state.depth = 1
        try:
            return call(self, *args, **kwargs)
        except BaseException:
            _end_linger()
            raise
        finally:
            state.depth = 0
    module_call.__tailcause_wrapped__ = True
    # With the C extension, submodule calls skip the Python frame above, and so do the outermost
    # calls that continue the lingering stage (the decoding loop's calls after its first):
    # module_call then runs only when a stage may begin. Without it they take its fast paths.
    speedups = _native.speedups
    module.__call__ = (speedups.ModuleCall(call, module_call, _state, _end_linger) if speedups
                       else module_call)


def _instrument_faiss(faiss):
    for name in dir(faiss):
        cls = getattr(faiss, name)
        if isinstance(cls, type) and name.startswith("Index"):
            for method in ("search", "range_search"):
                if method in cls.__dict__:
                    _patch(cls, method, tailcause.Stage.RETRIEVAL)


def _instrument_urllib(request):
    _patch(request.OpenerDirector, "open", tailcause.Stage.TOOL)


def _instrument_http_client(client):
    for method in ("request", "getresponse"):
        _patch(client.HTTPConnection, method, tailcause.Stage.TOOL)


def _instrument_requests(requests):
    _patch(requests.Session, "request", tailcause.Stage.TOOL)


def _instrument_httpx(httpx):
    _patch(httpx.Client, "send", tailcause.Stage.TOOL)
    _patch(httpx.AsyncClient, "send", tailcause.Stage.TOOL)


def _instrument_openai(resources):
    for path in (("chat", "completions", "Completions"), ("chat", "completions", "AsyncCompletions"),
                 ("completions", "Completions"), ("completions", "AsyncCompletions")):
        owner = resources
        for part in path:
            owner = getattr(owner, part, None)
        if owner is not None:
            _patch(owner, "create", tailcause.Stage.GENERATION)


def _instrument_anthropic(resources):
    for cls in ("Messages", "AsyncMessages"):
        owner = getattr(getattr(resources, "messages", None), cls, None)
        if owner is not None:
            _patch(owner, "create", tailcause.Stage.GENERATION)


_HOOKS = {
    "torch": _instrument_torch,
    "faiss": _instrument_faiss,
    "urllib.request": _instrument_urllib,
    "http.client": _instrument_http_client,
    "requests": _instrument_requests,
    "httpx": _instrument_httpx,
    "openai.resources": _instrument_openai,
    "anthropic.resources": _instrument_anthropic,
}


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the loader of every module with a hook (or an entry/app to wrap) so the hook runs
    right after the module's own code."""

    def __init__(self, targets):
        self.targets = targets  # module name -> [callable(module)]

    def find_spec(self, name, path, target=None):
        if name not in self.targets:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, hooks = spec.loader, self.targets[name]

        class _Loader(importlib.abc.Loader):
            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                loader.exec_module(module)
                for hook in hooks:
                    hook(module)
        spec.loader = _Loader()
        return spec


def install(entry=None, wsgi=None, asgi=None, tenant_arg=None, tenant_header=None,
            tenant_env=None, agent=None, name="python"):
    """Installs the hooks (idempotent per process)."""
    _settings.update(entry=entry, tenant_arg=tenant_arg, tenant_header=tenant_header,
                     tenant_env=tenant_env, agent=agent, name=name)
    targets = {}
    for module, hook in _HOOKS.items():
        targets.setdefault(module, []).append(hook)
    for spec, wrap in ((entry, wrap_entry), (wsgi, wrap_wsgi), (asgi, wrap_asgi)):
        if spec and ":" in spec:
            module, attr = spec.split(":", 1)

            def hook(mod, attr=attr, wrap=wrap):
                setattr(mod, attr, wrap(getattr(mod, attr)))
            targets.setdefault(module, []).append(hook)
    for module, hooks in targets.items():
        if module in sys.modules:
            for hook in hooks:
                hook(sys.modules[module])
    sys.meta_path.insert(0, _Finder({m: h for m, h in targets.items() if m not in sys.modules}))


class _WrapEntry(ast.NodeTransformer):
    """After `def NAME` at a script's top level: NAME = __tailcause_wrap_entry__(NAME)."""

    def __init__(self, name):
        self.name = name

    def visit_Module(self, node):
        body = []
        for stmt in node.body:
            body.append(stmt)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == self.name:
                body.append(ast.parse(f"{self.name} = __tailcause_wrap_entry__({self.name})").body[0])
        node.body = body
        return ast.fix_missing_locations(node)


def _run_script(path, entry):
    with open(path, "rb") as f:
        source = f.read()
    tree = ast.parse(source, path)
    if entry and ":" not in entry:
        tree = _WrapEntry(entry).visit(tree)
    code = compile(tree, path, "exec")
    main = type(sys)("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    main.__tailcause_wrap_entry__ = wrap_entry
    sys.modules["__main__"] = main
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    exec(code, main.__dict__)


_OPTIONS = ("entry", "wsgi", "asgi", "tenant_arg", "tenant_header", "tenant_env", "agent")
_USAGE = ("usage: python3 -m tailcause.instrument [--entry FUNC|MODULE:FUNC] [--wsgi MODULE:APP] "
          "[--asgi MODULE:APP] [--tenant-arg NAME] [--tenant-header NAME] [--tenant-env VAR] "
          "[--agent NAME] (script.py | -m MODULE) [ARGS...]")


def _parse(argv):
    """Our options up to the program; everything from the script (or -m MODULE) on is the
    program's own, options included."""
    opts = {k: os.environ.get("TAILCAUSE_INSTRUMENT_" + k.upper()) for k in _OPTIONS}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-h", "--help"):
            print(_USAGE)
            sys.exit(0)
        if arg == "-m":
            if i + 1 == len(argv):
                raise SystemExit("tailcause.instrument: -m needs a module name\n" + _USAGE)
            return opts, argv[i + 1], argv[i + 2:]
        if not arg.startswith("--"):
            break
        key, eq, value = arg[2:].partition("=")
        key = key.replace("-", "_")
        if key not in _OPTIONS:
            raise SystemExit(f"tailcause.instrument: unknown option {arg}\n" + _USAGE)
        if not eq:
            if i + 1 == len(argv):
                raise SystemExit(f"tailcause.instrument: {arg} needs a value\n" + _USAGE)
            i += 1
            value = argv[i]
        opts[key] = value
        i += 1
    if i == len(argv):
        raise SystemExit("tailcause.instrument: give a script (agent.py ARGS...) or -m MODULE\n"
                         + _USAGE)
    return opts, None, argv[i:]


def main(argv=None):
    # Run as `python3 -m tailcause.instrument` this module is __main__: make an import of
    # tailcause.instrument (by the agent, or by a hook) find this instance and its settings.
    sys.modules.setdefault("tailcause.instrument", sys.modules[__name__])
    opts, module, program = _parse(sys.argv[1:] if argv is None else argv)
    if module:
        name = module
    else:
        name = os.path.splitext(os.path.basename(program[0]))[0]
    install(opts["entry"], opts["wsgi"], opts["asgi"], opts["tenant_arg"], opts["tenant_header"],
            opts["tenant_env"], opts["agent"], name)
    if module:
        sys.argv = [module] + program
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = program
        _run_script(program[0], opts["entry"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
