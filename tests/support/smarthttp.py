"""git's smart HTTP on 127.0.0.1: ``git http-backend`` run as a CGI program, one process per
request, behind ``http.server``. Run as a program (``python smarthttp.py ROOT PORT``) by
``support.servers.SmartHttp``, so that stopping it refuses connections as a stopped web
server does. Standard library only: it runs outside the test's interpreter state."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

# Request headers git sends that http-backend reads from its CGI environment.
PASSED_HEADERS = ("Content-Encoding", "Git-Protocol")


class Backend(BaseHTTPRequestHandler):
    """Runs ``git http-backend`` for each request, as a web server runs a CGI program."""

    protocol_version = "HTTP/1.1"  # keep-alive and Expect: 100-continue, as git's curl wants
    root = ""

    def do_GET(self) -> None:
        self.run_backend()

    def do_POST(self) -> None:
        self.run_backend()

    def request_body(self) -> bytes:
        """The body as sent: git sends a large push with ``Transfer-Encoding: chunked``
        (over ``http.postBuffer``) and without a length; a gzipped body stays gzipped, for
        http-backend inflates it itself (it reads ``HTTP_CONTENT_ENCODING``)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return b"".join(self.chunks())
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def chunks(self) -> Iterator[bytes]:
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            yield self.rfile.read(size)
            self.rfile.readline()  # the CRLF after each chunk
        while self.rfile.readline().strip():  # trailers, up to the blank line
            pass

    def run_backend(self) -> None:
        path, _, query = self.path.partition("?")
        body = self.request_body()
        env = dict(os.environ)
        env.update(
            GATEWAY_INTERFACE="CGI/1.1",
            SERVER_PROTOCOL=self.request_version,
            GIT_PROJECT_ROOT=self.root,
            GIT_HTTP_EXPORT_ALL="1",
            REQUEST_METHOD=self.command,
            PATH_INFO=unquote(path),
            QUERY_STRING=query,
            CONTENT_TYPE=self.headers.get("Content-Type", ""),
            CONTENT_LENGTH=str(len(body)),
            # An authenticated user: http-backend serves receive-pack only to one.
            REMOTE_USER="gitlocks-test",
            REMOTE_ADDR=self.client_address[0],
        )
        for header in PASSED_HEADERS:
            if (value := self.headers.get(header)) is not None:
                env["HTTP_" + header.upper().replace("-", "_")] = value
        done = subprocess.run(
            ["git", "http-backend"], input=body, capture_output=True, env=env, check=False
        )
        sys.stderr.buffer.write(done.stderr)
        head, _, answer = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        if done.returncode and not done.stdout:
            status = 500
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # racing tests connect many at once


def main(argv: list[str]) -> None:
    root, port = argv
    Backend.root = root
    Server(("127.0.0.1", int(port)), Backend).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
