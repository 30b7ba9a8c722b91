"""HTTP/2 (ALPN h2) end to end: the real server over real TLS on 127.0.0.1, driven by curl (nghttp2)
as the independent client, and by a frame-level client built on h2 where a test must see frames
(RST_STREAM, WINDOW_UPDATE, SETTINGS, GOAWAY) that curl does not expose. Every test is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest
from hyperframe.frame import DataFrame, Frame, GoAwayFrame, HeadersFrame, RstStreamFrame

from tests.fixtures.control_plane import delegated_server, running_control_plane
from tests.fixtures.objects import topping
from tests.fixtures.server import RunningServer, running_server

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")

TEST_TIMEOUT = 60.0
TOPPINGS = "/apis/restaurant.programming-kubernetes.info/v1beta1/toppings"
GROUP = "restaurant.programming-kubernetes.info"


@contextlib.asynccontextmanager
async def _server(tmp_path: Path, *flags: str) -> AsyncIterator[RunningServer]:
    async with asyncio.timeout(TEST_TIMEOUT), running_server(tmp_path / "data", *flags) as server:
        yield server


def _port(server: RunningServer) -> int:
    return int(server.url.rpartition(":")[2])


async def _curl(
    server: RunningServer, *args: str, cert: tuple[Path, Path] | None = None
) -> tuple[int, str, str]:
    """curl over HTTP/2 with the admin certificate (or ``cert``); returns (exit code, stdout, stderr)."""
    key_pair = cert or (server.cert_dir / "admin.crt", server.cert_dir / "admin.key")
    process = await asyncio.create_subprocess_exec(
        "curl",
        "-sS",
        "--max-time",
        "30",
        "--cacert",
        str(server.ca_path),
        "--cert",
        str(key_pair[0]),
        "--key",
        str(key_pair[1]),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


class FrameClient:
    """A minimal HTTP/2 client on h2: opens streams and reports the frames' events as they arrive.

    Received DATA is acknowledged (returned to the server's windows) only with ``auto_ack``, so a test
    can hold the 65,535-byte initial windows closed and watch the server wait for WINDOW_UPDATE.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, auto_ack: bool) -> None:
        self.reader, self.writer, self.auto_ack = reader, writer, auto_ack
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        self.conn.initiate_connection()
        self.flush()
        self.backlog: list[h2.events.Event] = []

    @classmethod
    async def connect(cls, server: RunningServer, *, auto_ack: bool = True) -> FrameClient:
        context = server.ssl_context()
        context.set_alpn_protocols(["h2"])
        reader, writer = await asyncio.open_connection("127.0.0.1", _port(server), ssl=context)
        assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "h2"
        return cls(reader, writer, auto_ack)

    def flush(self) -> None:
        self.writer.write(self.conn.data_to_send())

    def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: tuple[tuple[str, str], ...] = (),
        open_body: bool = False,
    ) -> int:
        """Open a stream; with ``open_body`` the body follows through ``send_body``."""
        stream_id = self.conn.get_next_available_stream_id()
        block = [(":method", method), (":scheme", "https"), (":authority", "127.0.0.1"), (":path", path)]
        block += list(headers)
        self.conn.send_headers(
            stream_id, [(k.encode(), v.encode()) for k, v in block], end_stream=not body and not open_body
        )
        if body:
            self.conn.send_data(stream_id, body, end_stream=True)
        self.flush()
        return stream_id

    async def send_body(self, stream_id: int, body: bytes) -> None:
        """DATA within the server's windows, waiting for its WINDOW_UPDATEs; END_STREAM at the end."""
        view = memoryview(body)
        while view:
            size = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            if size <= 0:
                event = await self.next_event()
                assert event is not None, "closed while waiting for a window"
                continue
            self.conn.send_data(stream_id, view[:size].tobytes())
            view = view[size:]
            self.flush()
        self.conn.end_stream(stream_id)
        self.flush()

    async def next_event(self) -> h2.events.Event | None:
        """The next event; None once the server closed the connection."""
        while not self.backlog:
            data = await self.reader.read(65536)
            if not data:
                return None
            for event in self.conn.receive_data(data):
                if isinstance(event, h2.events.DataReceived) and self.auto_ack:
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                self.backlog.append(event)
            self.flush()
        return self.backlog.pop(0)

    async def response(self, stream_id: int) -> tuple[int, bytes]:
        """Status and body of a stream, read to its END_STREAM."""
        status, body = 0, bytearray()
        while True:
            event = await self.next_event()
            assert event is not None, "connection closed before the stream ended"
            if getattr(event, "stream_id", None) != stream_id:
                continue
            if isinstance(event, h2.events.ResponseReceived):
                status = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                body += event.data
            elif isinstance(event, h2.events.StreamEnded):
                return status, bytes(body)
            elif isinstance(event, h2.events.StreamReset):
                raise AssertionError(f"stream reset: {event.error_code!r}")

    async def raw_frames(self) -> list[Frame]:
        """Every frame until the server closes the connection, parsed by hyperframe alone: h2's state
        machine takes no DATA after a GOAWAY, and a graceful shutdown sends DATA after its GOAWAY."""
        data = bytearray()
        while chunk := await self.reader.read(65536):
            data += chunk
        frames: list[Frame] = []
        position = 0
        while position + 9 <= len(data):
            frame, length = Frame.parse_frame_header(memoryview(data)[position : position + 9])
            frame.parse_body(memoryview(data)[position + 9 : position + 9 + length])
            frames.append(frame)
            position += 9 + length
        return frames

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await self.writer.wait_closed()


async def _watch_requests_total(server: RunningServer) -> float:
    """apiserver_request_total for WATCH requests: counted when a watch's handler has ended."""
    async with server.session() as session, session.get("/metrics") as response:
        text = await response.text()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and 'verb="WATCH"' in line:
            total += float(line.rpartition(" ")[2])
    return total


async def _create_toppings(server: RunningServer, count: int) -> None:
    connector = aiohttp.TCPConnector(ssl=server.ssl_context(), limit=1)
    async with aiohttp.ClientSession(base_url=server.url, connector=connector) as session:
        semaphore = asyncio.Semaphore(16)

        async def create(i: int) -> None:
            async with semaphore, session.post(TOPPINGS, json=topping(f"t{i:05d}")) as response:
                assert response.status == 201, await response.text()

        await asyncio.gather(*(create(i) for i in range(count)))


async def test_get_list_and_create_over_h2(tmp_path: Path) -> None:
    async with _server(tmp_path) as server:
        code, out, err = await _curl(
            server,
            "--http2",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            json.dumps(topping("cheese", 2)),
            "-w",
            "\n%{http_version} %{http_code}",
            f"{server.url}{TOPPINGS}",
        )
        assert code == 0, err
        body, _, status = out.rpartition("\n")
        assert status == "2 201", out
        assert json.loads(body)["metadata"]["name"] == "cheese"

        code, out, err = await _curl(
            server, "--http2", "-w", "\n%{http_version} %{http_code}", f"{server.url}{TOPPINGS}/cheese"
        )
        body, _, status = out.rpartition("\n")
        assert (code, status) == (0, "2 200"), err
        assert json.loads(body)["spec"]["cost"] == 2

        code, out, err = await _curl(server, "--http2", "-i", f"{server.url}{TOPPINGS}")
        assert code == 0, err
        head, _, body = out.partition("\r\n\r\n")
        assert head.startswith("HTTP/2 200"), head
        # The handler chain ran: kube's Audit-ID and Cache-Control, and no HTTP/1.1 framing fields.
        assert "audit-id:" in head and "cache-control: no-cache, private" in head
        assert "transfer-encoding" not in head and "connection:" not in head
        assert [item["metadata"]["name"] for item in json.loads(body)["items"]] == ["cheese"]

        # The metrics filter counted them as for HTTP/1.1.
        async with server.session() as session, session.get("/metrics") as response:
            metrics = await response.text()
        assert any(
            line.startswith("apiserver_request_total{") and 'verb="POST"' in line and 'code="201"' in line
            for line in metrics.splitlines()
        )


async def test_client_offering_only_http11_gets_http11(tmp_path: Path) -> None:
    async with _server(tmp_path) as server:
        code, out, err = await _curl(
            server, "--http1.1", "-o", "/dev/null", "-w", "%{http_version}", f"{server.url}/version"
        )
        assert (code, out) == (0, "1.1"), err
        context = server.ssl_context()
        context.set_alpn_protocols(["http/1.1"])
        _, writer = await asyncio.open_connection("127.0.0.1", _port(server), ssl=context)
        assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "http/1.1"
        writer.close()
        # No ALPN at all (aiohttp's client): HTTP/1.1 as before.
        async with server.session() as session, session.get("/version") as response:
            assert response.status == 200 and response.version == aiohttp.HttpVersion11


async def test_h2_can_be_disabled(tmp_path: Path) -> None:
    async with _server(tmp_path, "--disable-http2-serving") as server:
        code, out, err = await _curl(
            server, "--http2", "-o", "/dev/null", "-w", "%{http_version}", f"{server.url}/version"
        )
        assert (code, out) == (0, "1.1"), err


async def test_watch_streams_events_and_client_reset_ends_its_handler(tmp_path: Path) -> None:
    async with _server(tmp_path) as server:
        client = await FrameClient.connect(server)
        try:
            before = await _watch_requests_total(server)
            watch = client.request("GET", f"{TOPPINGS}?watch=1&allowWatchBookmarks=true")
            async with (
                server.session() as session,
                session.post(TOPPINGS, json=topping("olive")) as response,
            ):
                assert response.status == 201
            lines = bytearray()
            status = 0
            while b"\n" not in lines:
                event = await client.next_event()
                assert event is not None
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers)[b":status"])
                elif isinstance(event, h2.events.DataReceived) and event.stream_id == watch:
                    lines += event.data
            assert status == 200
            first = json.loads(lines.split(b"\n")[0])
            assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "olive")

            # RST_STREAM cancels the watch's handler while the connection stays up.
            client.conn.reset_stream(watch)
            client.flush()
            for _ in range(100):
                if await _watch_requests_total(server) > before:
                    break
                await asyncio.sleep(0.05)
            assert await _watch_requests_total(server) == before + 1
            status, body = await client.response(client.request("GET", f"{TOPPINGS}/olive"))
            assert status == 200 and json.loads(body)["metadata"]["name"] == "olive"
        finally:
            await client.close()

        # curl's watch, ended by the client going away.
        before = await _watch_requests_total(server)
        code, out, _ = await _curl(
            server, "--http2", "-N", "--max-time", "2", f"{server.url}{TOPPINGS}?watch=1"
        )
        assert code == 28  # curl's "operation timed out": the watch streamed until curl gave up
        assert json.loads(out.splitlines()[0])["type"] == "ADDED"
        for _ in range(100):
            if await _watch_requests_total(server) > before:
                break
            await asyncio.sleep(0.05)
        assert await _watch_requests_total(server) == before + 1


async def test_watch_ends_with_end_stream(tmp_path: Path) -> None:
    async with _server(tmp_path) as server:
        code, out, err = await _curl(
            server,
            "--http2",
            "-w",
            "\n%{http_version} %{http_code}",
            f"{server.url}{TOPPINGS}?watch=1&timeoutSeconds=1",
        )
        assert code == 0, err  # curl saw the stream end cleanly
        assert out.endswith("\n2 200"), out


async def test_many_concurrent_streams_share_one_connection(tmp_path: Path) -> None:
    async with _server(tmp_path, "--max-connections", "2") as server:
        await _create_toppings(server, 3)
        urls = [f"{server.url}{TOPPINGS}/t{i % 3:05d}" for i in range(60)]
        # Without --parallel-immediate curl waits for the first connection and multiplexes on it.
        per_url = [arg for url in urls for arg in (url, "-o", "/dev/null")]
        code, out, err = await _curl(
            server,
            "--http2",
            "--parallel",
            "--parallel-max",
            "60",
            "-w",
            "%{http_code} %{http_version} %{num_connects}\n",
            *per_url,
        )
        assert code == 0, err
        rows = [line.split() for line in out.splitlines() if line.strip()]
        assert len(rows) == 60
        assert {(row[0], row[1]) for row in rows} == {("200", "2")}
        # One TLS connection for all 60.
        assert sum(int(row[2]) for row in rows) == 1

        client = await FrameClient.connect(server)
        try:
            while client.conn.remote_settings.max_concurrent_streams > 1_000:
                assert await client.next_event() is not None  # the server's SETTINGS
            settings = client.conn.remote_settings
            # kube's generic apiserver: 100 streams, 256 KiB stream windows and read frames.
            assert settings.max_concurrent_streams == 100
            assert settings.initial_window_size == 256 * 1024
            assert settings.max_frame_size == 256 * 1024
            assert settings.max_header_list_size == (1 << 20) + 320
        finally:
            await client.close()


async def test_max_streams_flag(tmp_path: Path) -> None:
    async with _server(tmp_path, "--http2-max-streams-per-connection", "7") as server:
        client = await FrameClient.connect(server)
        try:
            while client.conn.remote_settings.max_concurrent_streams > 1_000:
                assert await client.next_event() is not None
            assert client.conn.remote_settings.max_concurrent_streams == 7
        finally:
            await client.close()


async def test_flow_control_on_a_large_list_and_a_large_body(tmp_path: Path) -> None:
    async with _server(tmp_path) as server:
        await _create_toppings(server, 2000)
        async with server.session() as session, session.get(TOPPINGS) as response:
            http11 = await response.read()
        assert len(http11) > 10 * 65_535

        code, out, err = await _curl(server, "--http2", f"{server.url}{TOPPINGS}")
        assert code == 0, err
        assert len(json.loads(out)["items"]) == 2000

        # A client that returns no window: the server sends the initial 65,535 bytes and waits; a
        # GET on another stream of the same connection is still answered meanwhile.
        client = await FrameClient.connect(server, auto_ack=False)
        try:
            big = client.request("GET", TOPPINGS)
            received = 0
            while received < 65_535:
                event = await client.next_event()
                assert event is not None
                if isinstance(event, h2.events.DataReceived):
                    received += event.flow_controlled_length
            assert received == 65_535
            # That spent the connection window too: open it (not the big stream's window) and ask for
            # something else on the same connection.
            client.conn.increment_flow_control_window(10 * 1024 * 1024)
            small = client.request("GET", "/version")
            status, body = 0, b""
            while True:
                event = await client.next_event()
                assert event is not None
                if isinstance(event, h2.events.DataReceived) and event.stream_id == big:
                    received += event.flow_controlled_length
                if getattr(event, "stream_id", None) != small:
                    continue
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers)[b":status"])
                elif isinstance(event, h2.events.DataReceived):
                    body += event.data
                    client.conn.acknowledge_received_data(event.flow_controlled_length, small)
                elif isinstance(event, h2.events.StreamEnded):
                    break
            assert status == 200 and json.loads(body)["major"]
            assert received == 65_535  # the big stream still waits for its own window
            # Open the big stream's window: the server carries on where it waited.
            client.conn.increment_flow_control_window(len(http11), big)
            client.flush()
            rest = bytearray()
            while True:
                event = await client.next_event()
                assert event is not None
                if isinstance(event, h2.events.DataReceived) and event.stream_id == big:
                    rest += event.data
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == big:
                    break
            assert received + len(rest) == len(http11)
        finally:
            await client.close()

        # A request body of 1 MiB, four times the 256 KiB stream window: the server returns the
        # window as the handler reads it, and answers (422: the annotations are too large).
        body_file = tmp_path / "big.json"
        huge = topping("huge")
        huge["metadata"]["annotations"] = {"big": "x" * (1 << 20)}
        body_file.write_text(json.dumps(huge))
        code, out, err = await _curl(
            server,
            "--http2",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            f"@{body_file}",
            "-w",
            "\n%{http_version} %{http_code}",
            f"{server.url}{TOPPINGS}",
        )
        assert code == 0, err
        assert out.endswith("\n2 422"), out[-300:]


async def test_request_bodies_give_the_connection_window_back(tmp_path: Path) -> None:
    """One stream per connection makes the connection window one stream window (256 KiB): four
    bodies of 200 KB on one connection pass only if each one's bytes are returned to it."""
    async with _server(tmp_path, "--http2-max-streams-per-connection", "1") as server:
        client = await FrameClient.connect(server)
        try:
            for i in range(4):
                big = topping(f"big{i}")
                big["metadata"]["annotations"] = {"note": "z" * 200_000}
                stream_id = client.request(
                    "POST", TOPPINGS, headers=(("content-type", "application/json"),), open_body=True
                )
                await client.send_body(stream_id, json.dumps(big).encode())
                status, body = await client.response(stream_id)
                assert status == 201, body[:300]
        finally:
            await client.close()


async def test_header_list_over_the_limit_gets_431(tmp_path: Path) -> None:
    async with _server(tmp_path, "--max-header-bytes", "8192") as server:
        header = tmp_path / "header.txt"
        header.write_text("X-Big: " + "y" * 9000 + "\n")
        code, out, err = await _curl(
            server,
            "--http2",
            "-H",
            f"@{header}",
            "-w",
            "\n%{http_version} %{http_code}",
            f"{server.url}/version",
        )
        assert code == 0, err
        assert out.endswith("\n2 431"), out
        assert "Request Header Field(s) Too Large" in out
        # Under the limit, the same connection settings serve it.
        header.write_text("X-Big: " + "y" * 4000 + "\n")
        code, out, err = await _curl(
            server,
            "--http2",
            "-H",
            f"@{header}",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
            f"{server.url}/version",
        )
        assert (code, out) == (0, "2 200"), err


async def test_connection_cap_counts_connections_not_streams(tmp_path: Path) -> None:
    async with _server(tmp_path, "--max-connections", "2") as server:
        first = await FrameClient.connect(server)
        second = await FrameClient.connect(server)
        try:
            watches = [client.request("GET", f"{TOPPINGS}?watch=1") for client in (first, second)]
            for client, _ in zip((first, second), watches, strict=True):
                event = await client.next_event()
                while not isinstance(event, h2.events.ResponseReceived):
                    event = await client.next_event()
            code, _, _ = await _curl(server, "--http2", "-o", "/dev/null", f"{server.url}/version")
            assert code != 0  # the third connection is closed at once
            # More streams on an open connection are not more connections.
            status, _ = await first.response(first.request("GET", "/version"))
            assert status == 200
        finally:
            await first.close()
            await second.close()


async def test_idle_connection_gets_goaway(tmp_path: Path) -> None:
    async with _server(tmp_path, "--idle-timeout", "1s") as server:
        client = await FrameClient.connect(server)
        try:
            status, _ = await client.response(client.request("GET", "/version"))
            assert status == 200
            terminated = None
            async with asyncio.timeout(10):
                while (event := await client.next_event()) is not None:
                    if isinstance(event, h2.events.ConnectionTerminated):
                        terminated = event
            assert terminated is not None and terminated.error_code == 0
        finally:
            await client.close()


async def test_graceful_shutdown_sends_goaway_and_ends_open_streams(tmp_path: Path) -> None:
    stop = asyncio.Event()
    async with asyncio.timeout(TEST_TIMEOUT):
        from server.cli import serve
        from server.options import parse_args
        from tests.fixtures.server import server_args

        options = parse_args(server_args(tmp_path / "data")).complete()
        url: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        serving = asyncio.create_task(serve(options, ready=url.set_result, stop=stop))
        await url
        assert options.serving.cert_dir is not None and options.generic.admin_kubeconfig is not None
        server = RunningServer(
            url.result(), tmp_path / "data", options.generic.admin_kubeconfig, options.serving.cert_dir
        )
        client = await FrameClient.connect(server)
        try:
            watch = client.request("GET", f"{TOPPINGS}?watch=1")
            event = await client.next_event()
            while not isinstance(event, h2.events.ResponseReceived):
                event = await client.next_event()
            client.backlog.clear()
            stop.set()
            frames = await client.raw_frames()
            goaway = [i for i, f in enumerate(frames) if isinstance(f, GoAwayFrame)]
            assert goaway, frames
            first = frames[goaway[0]]
            assert isinstance(first, GoAwayFrame)
            assert (first.error_code, first.last_stream_id) == (0, watch)
            # The watch under way ended with END_STREAM after the GOAWAY, not with a reset.
            ended = [
                i
                for i, f in enumerate(frames)
                if isinstance(f, DataFrame | HeadersFrame)
                and f.stream_id == watch
                and "END_STREAM" in f.flags
            ]
            assert ended and ended[0] > goaway[0], frames
            assert not [f for f in frames if isinstance(f, RstStreamFrame)]
        finally:
            await client.close()
            stop.set()
            await serving


async def test_front_proxy_headers_and_client_certificates_over_h2(tmp_path: Path) -> None:
    async with (
        asyncio.timeout(TEST_TIMEOUT),
        running_control_plane(tmp_path / "cp") as plane,
        delegated_server(tmp_path / "data", plane) as server,
    ):
        proxy = (plane.pki.front_proxy_client.cert, plane.pki.front_proxy_client.key)
        # The front proxy's certificate with X-Remote-*: the user is the header's.
        code, out, err = await _curl(
            server,
            "--http2",
            "-H",
            "X-Remote-User: alice",
            "-H",
            "X-Remote-Group: system:masters",
            "-w",
            "\n%{http_version} %{http_code}",
            f"{server.url}{TOPPINGS}",
            cert=proxy,
        )
        assert code == 0, err
        assert out.endswith("\n2 200"), out
        code, out, err = await _curl(
            server,
            "--http2",
            "-H",
            "X-Remote-User: nobody",
            "-w",
            "\n%{http_version} %{http_code}",
            f"{server.url}{TOPPINGS}",
            cert=proxy,
        )
        body, _, status = out.rpartition("\n")
        assert (code, status) == (0, "2 403"), out
        assert 'User "nobody"' in json.loads(body)["message"]
