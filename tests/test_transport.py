"""The transport layer against real servers on loopback: the cache belongs to a key, keys
never leak (errors, pickles, tracebacks, logs), a bad cache file never fails a load, waits
end on an interrupt, network errors say what failed, and the modules import in one
direction."""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import pickle
import sqlite3
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, quote_plus

import pandas as pd
import pytest

import mdframes as md
from mdframes import errors
from mdframes.cache import salt_path
from mdframes.cli import main
from mdframes.errors import CacheWarning, NetworkError, redact
from mdframes.ratelimit import Cancelled, RateGate
from mdframes.sandbox import Sandbox
from mdframes.transport import ServiceRetry

from .conftest import KEY

SECRET = "sk-live-very-secret-key-0123456789"
KEY_A = "key-a-0123456789abcdef"
KEY_B = "key-b-0123456789abcdef"
FORBIDDEN = "key-forbidden-0123456789"
REVOKED = "key-revoked-0123456789"


def _cache_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


# --- the cache belongs to a key ----------------------------------------------------------------


def test_a_key_never_reads_what_another_key_cached(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with Sandbox(api_keys=(KEY_A, KEY_B), forbidden_keys=(FORBIDDEN,)) as server:

        def client(key: str) -> md.Client:
            return md.Client(api_key=key, base_url=server.url, cache=path)

        with client(KEY_A) as a:
            v2 = md.load_insider_trading("AAPL", client=a)
            v1 = md.v1.load_available_markets(client=a)
        assert server.count() == 2
        # A key without access, and a revoked one, ask the service (v2 and v1) and fail.
        with client(FORBIDDEN) as forbidden, client(REVOKED) as revoked:
            with pytest.raises(md.PermissionDeniedError):
                md.load_insider_trading("AAPL", client=forbidden)
            with pytest.raises(md.PermissionDeniedError):
                md.v1.load_available_markets(client=forbidden)
            with pytest.raises(md.AuthenticationError):
                md.load_insider_trading("AAPL", client=revoked)
            with pytest.raises(md.AuthenticationError):
                md.v1.load_available_markets(client=revoked)
        assert server.count() == 6
        with client(KEY_B) as b:  # another good key: its own requests, the same data
            pd.testing.assert_frame_equal(md.load_insider_trading("AAPL", client=b), v2)
            pd.testing.assert_frame_equal(md.v1.load_available_markets(client=b), v1)
        assert server.count() == 8
        with client(KEY_A) as a:  # the first key still reads its own entries
            md.load_insider_trading("AAPL", client=a)
            md.v1.load_available_markets(client=a)
        assert server.count() == 8
    data = _cache_bytes(path)
    for key in (KEY_A, KEY_B, FORBIDDEN, REVOKED):
        for form in {key, quote(key, safe=""), quote_plus(key)}:
            assert form.encode() not in data
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("select count(*) from responses").fetchone()[0] == 4
    assert salt_path(path).stat().st_mode & 0o777 == 0o600


def test_a_response_read_from_the_cache_can_be_evicted(sandbox: Sandbox, tmp_path: Path) -> None:
    # A cached request no longer carries the key (it is stripped when stored), so eviction
    # must find the entry under the client's own key.
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=tmp_path / "c.sqlite") as client:
        client.get("/v2/markets")
        cached = client.get("/v2/markets")
        assert cached.from_cache
        client.evict([cached.request])
        assert not client.get("/v2/markets").from_cache
    assert sandbox.count() == 2


# --- keys never leak ------------------------------------------------------------------------------


class _Echo(BaseHTTPRequestHandler):
    """Error answers that echo the request line and headers, as some servers and proxies do."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        mode = self.server.mode  # type: ignore[attr-defined]
        seen = f"GET {self.path} Authorization: {self.headers.get('Authorization')}"
        status, ctype, extra = 200, "application/json", ""
        if mode == "v1_json":
            status = 401
            body = json.dumps({"error": "Unauthorized", "message": f"bad token: {seen}"})
        elif mode == "v1_200_error":
            body = json.dumps({"error": "Forbidden", "message": f"no access: {seen}"})
        elif mode == "v2_json":
            status = 403
            err = {"code": "FORBIDDEN", "message": f"denied: {seen} {dict(self.headers)}"}
            body = json.dumps({"success": False, "error": err})
        elif mode == "v2_no_envelope":
            status = 400
            body = json.dumps({"detail": seen})
        elif mode == "html":
            status, ctype = 502, "text/html"
            body = f"<html><body><h1>Bad Gateway</h1><p>{seen}</p></body></html>"
        elif mode == "broken_200":  # not JSON: the parser's error holds the whole body
            body = '{"success": true, "data": "' + seen
        elif mode == "retries_text":
            status = 401
            body = json.dumps({"error": "Unauthorized", "message": f"Max retries exceeded {seen}"})
        else:  # "bad_header": a good answer with a header line urllib3 cannot parse
            body = json.dumps(["DOW 30"])
            extra = "this line is not a header\r\n"
        data = body.encode()
        head = f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n"
        self.wfile.write((head + extra + "\r\n").encode() + data)


@pytest.fixture
def echo() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _leaks(exc: BaseException, secret: str) -> list[str]:
    """Every place an error could carry the key: text, attributes, traceback, pickle, chain."""
    found = []
    forms = {secret, quote(secret, safe=""), quote_plus(secret)}
    link: BaseException | None = exc
    while link is not None:
        texts = [str(link), repr(link), *(repr(v) for v in vars(link).values())]
        found += [t for t in texts for f in forms if f in t]
        link = link.__cause__ or link.__context__
    tb = "".join(traceback.format_exception(exc))
    found += [tb for f in forms if f in tb]
    blob = pickle.dumps(exc)
    found += ["pickle" for f in forms if f.encode() in blob]
    return found


@pytest.mark.parametrize(
    ("mode", "version", "error"),
    [
        ("v1_json", "v1", md.AuthenticationError),
        ("v1_200_error", "v1", md.PermissionDeniedError),
        ("v2_json", "v2", md.PermissionDeniedError),
        ("v2_no_envelope", "v2", md.BadRequestError),
        ("html", "v1", md.ServerError),
        ("html", "v2", md.ServerError),
        ("broken_200", "v1", md.ResponseFormatError),
    ],
)
@pytest.mark.parametrize("secret", [SECRET, "sk+live/very=secret&key-0123456789", "Qz9"])
def test_text_the_server_sends_back_is_redacted(
    echo: ThreadingHTTPServer, mode: str, version: str, error: type, secret: str
) -> None:
    echo.mode = mode  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{echo.server_address[1]}"
    client = md.Client(api_key=secret, base_url=url, cache=False, max_retries=0)
    with pytest.raises(error) as info:
        client.get(f"/{version}/available/markets", version=version)
    assert _leaks(info.value, secret) == []
    assert "***" in str(info.value)  # the echo was there, and masked


def test_a_one_letter_key_is_masked_as_a_token(echo: ThreadingHTTPServer) -> None:
    echo.mode = "retries_text"  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{echo.server_address[1]}"
    client = md.Client(api_key="x", base_url=url, cache=False, max_retries=0)
    with pytest.raises(md.AuthenticationError) as info:
        client.get("/v1/available/markets", version="v1")
    assert "Max retries exceeded" in str(info.value)
    assert "token=***" in str(info.value)
    assert (
        redact("Max retries exceeded: x, x-ray, box", "x")
        == "Max retries exceeded: ***, ***-ray, box"
    )


@pytest.mark.parametrize("key", ["", " ", "\t\n", "two words", "ctrl\x00char"])
def test_keys_that_cannot_be_keys_are_refused(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(md.ConfigurationError, match="api_key") as info:
        md.Client(api_key=key, base_url="https://api.example.com")
    assert key.strip() == "" or key not in str(info.value)
    if key.strip() == "":  # from the environment too
        monkeypatch.setenv("MDFRAMES_API_KEY", key if key else " ")
        with pytest.raises(md.ConfigurationError, match="MDFRAMES_API_KEY"):
            md.Client(base_url="https://api.example.com")


def test_a_pasted_line_break_around_the_key_is_dropped(sandbox: Sandbox) -> None:
    client = md.Client(api_key=f"  {KEY}\n", base_url=sandbox.url, cache=False)
    assert len(md.load_markets(client=client)) == 20


@pytest.mark.parametrize(
    "exc",
    [
        md.ApiError("m", status=418, code="TEAPOT", url="/v2/x"),
        md.RateLimitError("m", reset_at=datetime(2030, 1, 1, tzinfo=timezone.utc), status=429),
        md.InvalidParameterError("bad", parameter="limit", dataset="lobbying"),
        md.ResponseFormatError("shape", url="/v2/x", dataset="news"),
        md.DataValidationError("rows", dataset="news", failures=pd.DataFrame({"a": [1]})),
        NetworkError("cannot reach h:1: refused", host="h:1", reason="refused"),
        md.ConfigurationError("no key"),
    ],
)
def test_errors_pickle_with_their_attributes(exc: errors.MdframesError) -> None:
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc) and back.args == exc.args
    for name, value in vars(exc).items():
        got = getattr(back, name)
        assert got.equals(value) if isinstance(value, pd.DataFrame) else got == value


def test_urllib3_header_warnings_are_redacted(
    echo: ThreadingHTTPServer, caplog: pytest.LogCaptureFixture
) -> None:
    echo.mode = "bad_header"  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{echo.server_address[1]}"
    client = md.Client(api_key=SECRET, base_url=url, cache=False, max_retries=0)
    with caplog.at_level(logging.DEBUG):
        client.get("/v1/available/markets", version="v1")
    warned = [r for r in caplog.records if r.name == "urllib3.connection"]
    assert warned and "Failed to parse headers" in warned[0].getMessage()
    assert "token=***" in caplog.text and SECRET not in caplog.text


def test_log_filters_are_installed_by_a_client_not_by_import() -> None:
    code = """
import logging
import mdframes as md, mdframes.loaders
names = ["urllib3.connection", "urllib3.connectionpool", "urllib3.util.retry",
         "requests_cache.session", "requests_cache.backends.sqlite", "mdframes"]
before = [bool(logging.getLogger(n).filters) for n in names]
md.Client(api_key="k", base_url="https://api.example.com")
after = [bool(logging.getLogger(n).filters) for n in names]
print(before, after)
assert not any(before) and all(after)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


# --- a bad cache file -----------------------------------------------------------------------------


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not an SQLite file " * 200)


def _broken_pages(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[100:] = bytes((i * 37) % 251 for i in range(len(data) - 100))  # header kept
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_garbage, _broken_pages])
def test_a_corrupt_cache_warns_loads_without_it_and_cache_clear_recovers(
    sandbox: Sandbox,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    damage: object,
) -> None:
    path = tmp_path / "c.sqlite"
    monkeypatch.setenv("MDFRAMES_CACHE", str(path))
    with md.Client(api_key=KEY, base_url=sandbox.url) as client:
        md.load_markets(client=client)
    damage(path)  # type: ignore[operator]
    client = md.Client(api_key=KEY, base_url=sandbox.url)
    with client, pytest.warns(CacheWarning, match=f"{path}.*mdframes cache clear"):
        assert len(md.load_markets(client=client)) == 20
    assert sandbox.count() == 2
    assert main(["cache", "info"]) == 1
    out, err = capsys.readouterr()
    assert "unreadable" in out and "cache clear" in out and "Traceback" not in err
    assert main(["cache", "clear"]) == 0
    assert "deleted" in capsys.readouterr().out and not path.exists()
    with md.Client(api_key=KEY, base_url=sandbox.url) as client:
        md.load_markets(client=client)
        md.load_markets(client=client)
    assert sandbox.count() == 3  # a fresh cache works again


def test_a_cache_corrupted_while_in_use_falls_back(sandbox: Sandbox, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=path) as client:
        md.load_markets(client=client)
        _broken_pages(path)
        with pytest.warns(CacheWarning, match="malformed|not a database"):
            assert len(md.load_tickers(client=client, limit=5)) == 5
        assert len(md.load_regions(client=client)) > 0  # no second warning, no cache
    assert sandbox.count() == 3


@pytest.mark.parametrize("where", ["a directory", "under a file"])
def test_an_unusable_cache_location_warns_and_loads_without_it(
    sandbox: Sandbox, tmp_path: Path, where: str
) -> None:
    if where == "a directory":
        path = tmp_path / "c.sqlite"
        path.mkdir()
    else:
        (tmp_path / "file").write_text("x")
        path = tmp_path / "file" / "c.sqlite"
    with md.Client(api_key=KEY, base_url=sandbox.url, cache=path) as client:
        with pytest.warns(CacheWarning, match="cannot be used"):
            assert len(md.load_markets(client=client)) == 20
        md.load_markets(client=client)
    assert sandbox.count() == 2


# --- interrupts -----------------------------------------------------------------------------------


def test_an_interrupted_client_sends_nothing_until_the_next_load(sandbox: Sandbox) -> None:
    client = md.Client(api_key=KEY, base_url=sandbox.url, cache=False)
    md.load_markets(client=client)  # a pooled keep-alive connection now exists
    client.interrupt()
    with pytest.raises(Cancelled):
        client.get("/v2/markets")
    assert sandbox.count() == 1
    assert len(md.load_markets(client=client)) == 20  # a new load starts afresh
    assert sandbox.count() == 2


def test_rate_limit_waits_end_on_an_interrupt() -> None:
    cancel = threading.Event()
    gate = RateGate(cancel)
    gate.hold(datetime.now(timezone.utc) + timedelta(seconds=60))
    threading.Timer(0.1, cancel.set).start()
    with pytest.raises(Cancelled):
        gate.wait(max_wait=120)


def test_retry_backoff_ends_on_an_interrupt() -> None:
    retry = ServiceRetry(total=5, backoff_factor=30)
    retry.cancel = threading.Event()
    retry = retry.increment("GET", "/x", error=ConnectionResetError())
    retry = retry.increment("GET", "/x", error=ConnectionResetError())
    assert retry.get_backoff_time() >= 60
    threading.Timer(0.1, retry.cancel.set).start()
    with pytest.raises(Cancelled):
        retry.sleep()


# --- network errors -------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and "HTTPConnectionPool" not in text and "urllib3" not in text
    return text


def test_nothing_listening_on_loopback_suggests_the_sandbox() -> None:
    client = md.Client(api_key=SECRET, base_url="http://127.0.0.1:9", cache=False, max_retries=0)
    with pytest.raises(NetworkError) as info:
        md.load_markets(client=client)
    text = _one_line(info.value)
    assert "127.0.0.1:9" in text and "refused" in text and "md.sandbox.start()" in text
    assert info.value.host == "127.0.0.1:9"


def test_https_to_a_plain_http_server_names_the_scheme(shared_sandbox: Sandbox) -> None:
    url = shared_sandbox.url.replace("http://", "https://")
    client = md.Client(api_key=KEY, base_url=url, cache=False, max_retries=0)
    with pytest.raises(NetworkError) as info:
        md.load_markets(client=client)
    text = _one_line(info.value)
    assert f"127.0.0.1:{shared_sandbox.port}" in text and "TLS" in text and "scheme" in text


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8765/v2", "https://api.example.com/v1/", "https://h.example/api/V2"]
)
def test_a_base_url_ending_in_a_version_is_refused(url: str) -> None:
    with pytest.raises(md.ConfigurationError, match="give the service root"):
        md.Client(api_key=SECRET, base_url=url)


def test_no_scheme_suggests_one() -> None:
    with pytest.raises(md.ConfigurationError, match="did you mean 'http://127.0.0.1:8765'"):
        md.Client(api_key=SECRET, base_url="127.0.0.1:8765")


# --- structure ------------------------------------------------------------------------------------

TRANSPORT = (
    "errors",
    "config",
    "ratelimit",
    "envelope",
    "logfilter",
    "cache",
    "transport",
    "client",
)


def _imports(module: str) -> set[str]:
    source = Path(md.__file__).with_name(f"{module}.py").read_text()
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found & set(TRANSPORT)


def test_the_transport_modules_import_in_one_direction() -> None:
    graph = {m: _imports(m) for m in TRANSPORT}
    order: list[str] = []

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join((*path, module))}"
        for dep in sorted(graph[module]):
            visit(dep, (*path, module))
        if module not in order:
            order.append(module)

    for module in TRANSPORT:
        visit(module, ())
    assert all("client" not in graph[m] for m in TRANSPORT if m != "client")
