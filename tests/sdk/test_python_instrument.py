# SPDX-License-Identifier: Apache-2.0
"""tailcause.instrument without root: its option parsing, and what it turns into requests and
stages (the entry function a script defines, WSGI/ASGI apps, nested calls, http.client). The
script under test swaps the SDK's Request and Stage for recorders, so this checks the wrapping;
that the probes then reach the daemon is shown by tests/e2e/test_zerocode_instrument.sh.

Run by ctest with TAILCAUSE_SDK_LIB and PYTHONPATH set (sdk/CMakeLists.txt)."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from tailcause import instrument

# The SDK's probes swapped for recorders of what they are sent, as if a tracer were attached.
RECORDERS = textwrap.dedent('''
    import json, sys
    import tailcause.instrument as ti
    log, tenants = [], {}
    class Probes:
        def request_begin(self, rid, tenant, agent, trace_id):
            tenants[rid] = tenant.decode(); log.append(["request", tenant.decode(), agent.decode()])
        def request_end(self, rid, status): log.append(["end", tenants.get(rid, "?"), status])
        def stage_begin(self, rid, kind, name):  # follows: ends the lingering stage
            log.append(["stage", tenants.get(rid, "?"), kind & 0xff] + (["follows"] * (kind >> 8)))
        def stage_end(self, rid, kind):
            log.append(["stage_end"] if rid in tenants else ["stage_end", "unknown request"])
    class Attached:
        value = 1
    ti._probes = Probes()
    ti._S_REQUEST_BEGIN = ti._S_REQUEST_END = ti._S_STAGE_BEGIN = ti._S_STAGE_END = Attached()
''')

AGENT = RECORDERS + textwrap.dedent('''
    import asyncio, http.client, http.server, threading

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers()
            self.wfile.write(b"ok")
        def log_message(self, *a): pass
    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()

    def fetch():
        c = http.client.HTTPConnection("127.0.0.1", srv.server_address[1])
        c.request("GET", "/")  # a stage
        return c.getresponse().read()  # another top-level stage

    import socket
    closed = socket.socket(); closed.bind(("127.0.0.1", 0)); port = closed.getsockname()[1]
    closed.close()

    def handle(query, tenant="dflt"):
        fetch()
        try:  # refused: the call raises, and its stage ends there
            http.client.HTTPConnection("127.0.0.1", port).request("GET", "/")
        except OSError:
            pass
        handle_inner(tenant)  # nested entry call: joins the outer request
        return query

    def handle_inner(tenant):
        return tenant

    handle("q", tenant="t-one")
    fetch()  # outside a request: each stage its own request
    def app(environ, start_response): return [b"x"]
    ti.wrap_wsgi(app)({"HTTP_X_TENANT": "t-wsgi"}, None)
    async def asgi_app(scope, receive, send): return None
    asyncio.run(ti.wrap_asgi(asgi_app)({"type": "http", "headers": [(b"x-tenant", b"t-asgi")]}, None, None))
    print(json.dumps({"log": log, "argv": sys.argv}))
''')


class Options(unittest.TestCase):
    def test_the_programs_own_options_stay_its_own(self):
        opts, module, program = instrument._parse(
            ["--entry", "handle", "--tenant-arg=tenant", "agent.py", "--tenant", "x", "--entry"])
        self.assertEqual(opts["entry"], "handle")
        self.assertEqual(opts["tenant_arg"], "tenant")
        self.assertIsNone(module)
        self.assertEqual(program, ["agent.py", "--tenant", "x", "--entry"])
        self.assertEqual(instrument._parse(["-m", "pkg.mod", "-v"])[1:], ("pkg.mod", ["-v"]))

    def test_bad_options_exit_with_a_message(self):
        for argv in (["--colour", "red", "a.py"], [], ["--entry"], ["-m"]):
            with self.assertRaises(SystemExit) as e:
                instrument._parse(argv)
            self.assertIn("tailcause.instrument", str(e.exception))


# A stand-in for torch (the hook needs only torch.nn.Module) and a decoding loop on it.
FAKE_TORCH = textwrap.dedent('''
    class _Module:
        def __call__(self, *args, **kwargs):
            return self.forward(*args, **kwargs)
    class nn:
        Module = _Module
''')

DECODER = RECORDERS + textwrap.dedent('''
    import torch
    class Layer(torch.nn.Module):
        def __init__(self, inner=None): self.inner = inner
        def forward(self, x): return self.inner(x) if self.inner else x + 1  # a submodule call
    head, decoder = Layer(), Layer(Layer())

    def embed(x):
        return head(x)

    def generate(x):
        for _ in range(3):  # per token: the decoder, then the head
            x = head(decoder(x))
        return x

    def sample(x):
        return head(x)  # the same kind from another function: a stage of its own

    class Index:  # a wrapped library call, as faiss's search is
        def search(self, x):
            return x
    ti._patch(Index, "search", 2)  # retrieval

    def handle(query, tenant="dflt"):
        return sample(Index().search(generate(embed(query))))

    hook_calls = []  # the Python hook's calls in handle(): the C hook skips it where it can
    sys.setprofile(lambda frame, event, arg: hook_calls.append(1)
                   if event == "call" and frame.f_code.co_name == "module_call" else None)
    handle(1, tenant="t-one")
    sys.setprofile(None)
    head(0)  # outside a request: its own request and stage
    print(json.dumps({"log": log, "argv": sys.argv, "hook_calls": len(hook_calls)}))
''')


def run_instrumented(test, source, options, files=None, env=None):
    """Runs `source` as a script under `python3 -m tailcause.instrument OPTIONS`, beside
    `files` (name -> text), with `env` added to the environment; returns the JSON its last line
    prints and the script's path."""
    with tempfile.TemporaryDirectory() as d:
        for name, text in (files or {}).items():
            os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        script = os.path.join(d, "agent.py")
        with open(script, "w") as f:
            f.write(source)
        out = subprocess.run(
            [sys.executable, "-m", "tailcause.instrument", *options, script, "--flag", "v"],
            capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})
        test.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout.strip().splitlines()[-1]), script


class Wrapping(unittest.TestCase):
    def test_requests_and_stages(self):
        result, script = run_instrumented(
            self, AGENT, ["--entry", "handle", "--tenant-arg", "tenant", "--agent", "ag"])
        log = result["log"]
        self.assertEqual(result["argv"], [script, "--flag", "v"])
        tool = 4
        # One request for the entry call (the nested entry call joins it), two tool stages: each
        # lingers until the next begins (the response read is the second's) or the request ends.
        self.assertEqual(log[0], ["request", "t-one", "ag"])
        self.assertEqual(log[1:3], [["stage", "t-one", tool], ["stage", "t-one", tool, "follows"]])
        # The refused call's stage follows them and ends where it raised.
        self.assertEqual(log[3:5], [["stage", "t-one", tool, "follows"], ["stage_end"]])
        self.assertEqual(log[5], ["end", "t-one", 0])
        # Outside a request: each top-level stage is its own request, tenant the script's name.
        self.assertEqual(log[6:9], [["request", "agent", "ag"], ["stage", "agent", tool],
                                    ["end", "agent", 0]])
        self.assertEqual(log.count(["stage_end"]), 1, log)
        self.assertIn(["request", "t-wsgi", "ag"], log)
        self.assertIn(["request", "t-asgi", "ag"], log)
        self.assertEqual(sum(1 for e in log if e[0] == "request"), 5, log)

    def test_a_functions_consecutive_module_calls_are_one_stage(self):
        # Both forms of the module hook: the C one (tailcause._speedups, where built) and the
        # Python one.
        # The Python hook runs for all 11 module calls in handle() (8 outermost, 3 submodule
        # calls), or with the C hook only for the 3 that open a stage: submodule calls and
        # the calls that continue the lingering stage skip it.
        for env, hook_calls in (({}, 3), ({"TAILCAUSE_SDK_PURE_PYTHON": "1"}, 11)):
            with self.subTest(env=env):
                self.check_decoder_stages(env, hook_calls)

    def check_decoder_stages(self, env, hook_calls):
        result, _ = run_instrumented(self, DECODER, ["--entry", "handle", "--tenant-arg", "tenant",
                                                     "--agent", "ag"],
                                     {"torch/__init__.py": FAKE_TORCH}, env)
        embedding, retrieval, generation = 1, 2, 3
        self.assertEqual(result["log"], [
            ["request", "t-one", "ag"],
            ["stage", "t-one", embedding],
            ["stage", "t-one", generation, "follows"],  # generate(): 6 calls, one stage
            ["stage", "t-one", retrieval, "follows"],  # Index.search, until sample()'s call
            ["stage", "t-one", generation, "follows"],  # sample(), ended by the request's end
            ["end", "t-one", 0],
            ["request", "agent", "ag"], ["stage", "agent", generation],
            ["end", "agent", 0]])
        self.assertEqual(result["hook_calls"], hook_calls)


class EntryTenant(unittest.TestCase):
    """The tenant of an entry call: its --tenant-arg argument however it was passed."""

    def tenants(self, fn, calls):
        """The tenants request_begin is sent for `calls` of fn's entry wrapper (a tracer
        attached); a call that raises records the exception's type instead."""
        seen = []

        class Probes:
            def request_begin(self, rid, tenant, agent, trace_id):
                seen.append(tenant.decode())

            def request_end(self, rid, status):
                pass

        class Attached:
            value = 1

        swapped = ("_probes", "_S_REQUEST_BEGIN", "_S_REQUEST_END")
        saved = {name: getattr(instrument, name) for name in swapped}
        settings = dict(instrument._settings)
        instrument._probes, instrument._S_REQUEST_BEGIN = Probes(), Attached()
        instrument._S_REQUEST_END = Attached()
        instrument._settings.update(tenant_arg="tenant", tenant_env=None, name="script")
        try:
            entry = instrument.wrap_entry(fn)
            for args, kwargs in calls:
                try:
                    entry(*args, **kwargs)
                except (TypeError, ValueError) as e:
                    seen.append(type(e).__name__)
        finally:
            for name, value in saved.items():
                setattr(instrument, name, value)
            instrument._settings.clear()
            instrument._settings.update(settings)
        return seen

    def test_positional_keyword_default_and_keyword_only(self):
        def handle(agent, tenant, query=None):
            return query

        def keyword_only(query, *, tenant="x"):
            return query

        def catch_all(query, **kwargs):
            return query

        env = os.environ.pop("TAILCAUSE_TENANT", None)
        try:
            self.assertEqual(self.tenants(handle, [((None, "t-pos"), {}),
                                                   ((None,), {"tenant": "t-kw"}),
                                                   ((), {"agent": None, "tenant": "t-all"})]),
                             ["t-pos", "t-kw", "t-all"])
            # Not passed: the default tenant, not the parameter's default value.
            self.assertEqual(self.tenants(keyword_only, [(("q",), {"tenant": "t-ko"}), (("q",), {})]),
                             ["t-ko", "script"])
            self.assertEqual(self.tenants(catch_all, [(("q",), {"tenant": "t-any"})]), ["t-any"])
            # Any object is named by its str; a name the probe cannot carry is refused before
            # the call, and the thread has no request left open by it.
            self.assertEqual(self.tenants(handle, [((None, 42), {}), ((None, "a\0b"), {}),
                                                   ((None, "ok"), {})]),
                             ["42", "ValueError", "ok"])
            self.assertIsNone(instrument._state.request)
        finally:
            if env is not None:
                os.environ["TAILCAUSE_TENANT"] = env


if __name__ == "__main__":
    unittest.main()
