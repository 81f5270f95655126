"""A local S3 server (moto in server mode) on 127.0.0.1 for the lake's object-store tests.

Run as ``python -m tests.s3server``: it prints ``PORT <n>`` once it listens and serves until
killed. moto's own threaded server handles each request in a thread without making a
conditional write atomic: measured on 2026-11-24, 1 of 70 three-process ``If-None-Match: *``
races had two winners (boto3 and obstore alike), which S3 never allows. So requests are
handled one at a time here (connections are still accepted in threads), which makes every
conditional request atomic, as on S3.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any


def make_server(port: int = 0) -> Any:
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server as werkzeug_server

    app = DomainDispatcherApplication(create_backend_app)
    one_at_a_time = threading.Lock()

    def serial(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        with one_at_a_time:
            return list(app(environ, start_response))

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    return werkzeug_server("127.0.0.1", port, serial, threaded=True)


def main() -> None:
    server = make_server(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print("PORT", server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
