# SPDX-License-Identifier: Apache-2.0
"""tailcause.breaker_state() without root or a daemon: against a real BreakerSocket (the
breaker_server test program), against no daemon, and against canned servers that answer
garbage or nothing.

Run by ctest (sdk_python) with TAILCAUSE_SDK_LIB, PYTHONPATH and TAILCAUSE_BREAKER_SERVER set
(sdk/CMakeLists.txt)."""

import os
import socket
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path

import tailcause

REPO = Path(__file__).resolve().parents[2]


def server_binary():
    explicit = os.environ.get("TAILCAUSE_BREAKER_SERVER")
    return explicit or str(REPO / "build" / "testprogs" / "breaker_server")


class BreakerServer:
    """tests/testprogs/breaker_server on `path` with `table`; stopped by closing its stdin."""

    def __init__(self, path, table):
        self.proc = subprocess.Popen([server_binary(), path, *table], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if line != "ready\n":
            self.stop()
            raise AssertionError(f"breaker_server did not start: {line!r}")

    def stop(self):
        self.proc.stdin.close()
        try:
            out = self.proc.stdout.read()
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            self.proc.stdout.close()
        return out


class CannedServer:
    """Answers every connection with `reply` after one request line (None: never answers)."""

    def __init__(self, path, reply):
        self.reply = reply
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.sock.settimeout(0.05)
        self.held = []
        self.done = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.done:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(2)
            data = b""
            try:
                while not data.endswith(b"\n"):
                    chunk = conn.recv(1)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            self.requests.append(data)
            if self.reply is None:
                self.held.append(conn)
                continue
            conn.sendall(self.reply)
            conn.close()

    def close(self):
        self.done = True
        self.thread.join()
        for conn in self.held:
            conn.close()
        self.sock.close()


class BreakerState(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "breaker.sock")
        os.environ.pop("TAILCAUSE_BREAKER_SOCKET", None)

    def tearDown(self):
        os.environ.pop("TAILCAUSE_BREAKER_SOCKET", None)
        self.tmp.cleanup()

    def test_reads_states_from_a_real_breaker_socket(self):
        server = BreakerServer(self.path, [
            "acme", "rag", "open", "3", "1500",
            "t%20x", "%C3%BC", "closed", "2", "0",         # "t x", "ü"
            "a%25b%01", "%", "open", "9", "17",             # "a%b\x01", ""
        ])
        try:
            self.assertEqual(tailcause.breaker_state("acme", "rag", socket_path=self.path),
                             ("open", 1500))
            self.assertEqual(tailcause.breaker_state("t x", "ü", socket_path=self.path),
                             ("closed", 0))
            self.assertEqual(tailcause.breaker_state("a%b\x01", "", socket_path=self.path),
                             ("open", 17))
            self.assertEqual(tailcause.breaker_state("acme", "other", socket_path=self.path),
                             ("closed", 0))
            # The environment names the socket when no path is given.
            os.environ["TAILCAUSE_BREAKER_SOCKET"] = self.path
            self.assertEqual(tailcause.breaker_state("acme", "rag"), ("open", 1500))
        finally:
            summary = server.stop()
        self.assertIn("requests ok=5 error=0", summary)

    def test_a_busy_daemon_is_unavailable(self):
        server = BreakerServer(self.path, ["acme", "rag", "open", "3", "1500"])
        held = []
        try:
            for _ in range(64):  # the socket's clients, connected first so accepted first
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.connect(self.path)
                held.append(conn)
            for _ in range(10):
                with self.assertRaisesRegex(tailcause.BreakerUnavailable, "busy"):
                    tailcause.breaker_state("acme", "rag", socket_path=self.path, timeout=5)
        finally:
            for conn in held:
                conn.close()
            server.stop()

    def test_no_daemon_is_a_clear_exception(self):
        with self.assertRaisesRegex(tailcause.BreakerUnavailable, "no circuit-breaker socket"):
            tailcause.breaker_state("a", "b", socket_path=self.path)
        # A stale socket file: connection refused.
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(self.path)
        stale.close()
        with self.assertRaises(tailcause.BreakerUnavailable) as caught:
            tailcause.breaker_state("a", "b", socket_path=self.path)
        self.assertIsInstance(caught.exception.__cause__, ConnectionRefusedError)
        self.assertIsInstance(caught.exception, ConnectionError)  # catchable as such

    def test_a_silent_daemon_times_out_quickly(self):
        server = CannedServer(self.path, None)
        try:
            start = time.monotonic()
            with self.assertRaises(tailcause.BreakerUnavailable):
                tailcause.breaker_state("a", "b", socket_path=self.path)
            self.assertLess(time.monotonic() - start, 5)  # 100 ms by default; never a hang
        finally:
            server.close()

    def test_bad_replies_are_protocol_errors(self):
        cases = [b"garbage\n", b"ok open consecutive=1\n", b"ok open consecutive=1 retry_after_ms=5",
                 b"ok maybe consecutive=1 retry_after_ms=5\n", b"x" * 600 + b"\n", b"",
                 b"error unknown_command\n"]
        for reply in cases:
            path = os.path.join(self.tmp.name, f"canned-{len(reply)}-{reply[:4].hex()}.sock")
            server = CannedServer(path, reply)
            try:
                with self.assertRaises(tailcause.BreakerProtocolError, msg=reply[:40]):
                    tailcause.breaker_state("a b%", "ü", socket_path=path, timeout=5)
                self.assertEqual(server.requests[-1], b"state a%20b%25 %C3%BC\n")
            finally:
                server.close()
        busy = CannedServer(self.path, b"error busy 64 clients connected\n")
        try:
            with self.assertRaisesRegex(tailcause.BreakerUnavailable, "busy"):
                tailcause.breaker_state("a", "b", socket_path=self.path, timeout=5)
        finally:
            busy.close()

    def test_cache_state_reads_the_daemons_verdict_and_refuses_bad_replies(self):
        good = {b"ok breakdown competition_permille=952 miss_permille=1000 lookups=40\n":
                tailcause.CacheState("breakdown", 0.952, 1.0, 40),
                b"ok healthy competition_permille=0 miss_permille=0 lookups=0\n":
                tailcause.CacheState("healthy", 0.0, 0.0, 0)}
        bad = [b"ok healthy competition_permille=1001 miss_permille=0 lookups=0\n",
               b"ok healthy competition_permille=1 miss_permille=1\n",
               b"ok closed consecutive=0 retry_after_ms=0\n",
               b'error unknown_command command "cache"\n']  # a daemon without the command
        for i, (reply, want) in enumerate([*good.items(), *[(b, None) for b in bad]]):
            path = os.path.join(self.tmp.name, f"cache-{i}.sock")
            server = CannedServer(path, reply)
            try:
                if want is None:
                    with self.assertRaises(tailcause.BreakerProtocolError, msg=reply[:40]):
                        tailcause.cache_state("t a", "vectors", socket_path=path, timeout=5)
                else:
                    self.assertEqual(
                        tailcause.cache_state("t a", "vectors", socket_path=path, timeout=5), want)
                self.assertEqual(server.requests[-1], b"cache t%20a vectors\n")
            finally:
                server.close()
        with self.assertRaises(tailcause.BreakerUnavailable):
            tailcause.cache_state("a", "b", socket_path=os.path.join(self.tmp.name, "none.sock"))
        with self.assertRaisesRegex(ValueError, "NUL"):
            tailcause.cache_state("a", "b\0", socket_path=self.path)

    def test_bad_arguments(self):
        with self.assertRaises(TypeError):
            tailcause.breaker_state(b"a", "b", socket_path=self.path)
        with self.assertRaisesRegex(ValueError, "NUL"):
            tailcause.breaker_state("a\0", "b", socket_path=self.path)
        with self.assertRaisesRegex(ValueError, "too long"):
            tailcause.breaker_state("%" * 300, "b", socket_path=self.path)
        for bad in (0, -1, "1", True):
            with self.assertRaises(ValueError):
                tailcause.breaker_state("a", "b", socket_path=self.path, timeout=bad)


if __name__ == "__main__":
    unittest.main()
