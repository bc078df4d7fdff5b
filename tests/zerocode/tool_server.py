# SPDX-License-Identifier: Apache-2.0
"""A loopback tool server for tests/zerocode: answers every GET in DELAY seconds, half of them
before its headers and half before its body, as a slow API streams its answer (urlopen returns
at the headers: the rest is read after it).

  tool_server.py PORTFILE DELAY      (writes the port it listens on to PORTFILE)
"""
import http.server
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        half = float(sys.argv[2]) / 2
        time.sleep(half)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()  # sent now: the handler's output is unbuffered
        time.sleep(half)
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os  # noqa: E402  (the port file appears whole)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
