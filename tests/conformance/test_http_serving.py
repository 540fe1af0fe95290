"""How the HTTP server answers outside the bindings' own rules: paths, methods, ``HEAD``,
``Expect: 100-continue``, large bodies. One dispatcher serves the routes, either started
(``A2AServer.start``, on aiohttp's low-level server) or embedded (``A2AServer.app()`` in an
aiohttp application), and every test here runs both ways: the answers must be the same."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import aiohttp
import httpx
import pytest
from aiohttp import web
from aiohttp.typedefs import Handler

from a2a import A2AServer, BearerAuth, ServerConfig
from a2a.protocol.connection import WEBSOCKET_BINDING
from a2a.server.app import CARD_PATH, JSONRPC_PATH
from a2a.server.backends.store import TaskQuery
from a2a.types import TaskState
from tests.conftest import embedded

from .conftest import StartServer
from .helpers import WAIT, bounded, load_module, new_id, send_params, wait_until

#: Framing, 404/405, Expect, chunked bodies and middlewares of the aiohttp host; the ASGI host
#: runs the conformance suite's behaviour tests (its HTTP framing is its server's).
pytestmark = pytest.mark.aiohttp_host_only(reason="the aiohttp host's HTTP serving")

VERSION = {"A2A-Version": "1.0"}


class Counting:
    """A middleware (given the supported way, ``A2AServer(middlewares=...)``) that counts."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.seen.append(request.path)
        return await handler(request)


@pytest.fixture(params=["start", "embedded"])
async def served(request: pytest.FixtureRequest, serve: StartServer) -> AsyncIterator[tuple[str, A2AServer]]:
    agent = load_module("echo_agent.py").agent
    config = ServerConfig(max_body_bytes=3 * 1024 * 1024)
    if request.param == "start":
        server = await serve(agent, config=config, middlewares=[Counting()])
        assert server.url is not None
        yield server.url, server
    else:
        server = A2AServer(agent, config=config, middlewares=[Counting()])
        async with embedded(server.app()) as url:
            yield url, server


def rpc_body(text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params(text)}).encode()


@pytest.mark.aiohttp_host_only(reason="aiohttp middlewares and Expect handling are the aiohttp host's")
async def test_the_servers_middlewares_see_every_request(
    served: tuple[str, A2AServer], http: httpx.AsyncClient
) -> None:
    url, server = served
    response = await bounded(http.post(url + JSONRPC_PATH, headers=VERSION, content=rpc_body("hi")))
    assert response.json()["result"]["message"]["parts"][0]["text"] == "hi"
    missing = await bounded(http.get(url + "/nothing", headers=VERSION))
    assert missing.status_code == 404
    counting = server.middlewares[0]
    assert isinstance(counting, Counting)
    assert counting.seen == [JSONRPC_PATH, "/nothing"], "the middleware saw the request, and the unknown path"


async def test_middlewares_run_in_order_the_first_outermost() -> None:
    order: list[str] = []

    def named(name: str) -> object:
        async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
            order.append(f"{name} in")
            response = await handler(request)
            order.append(f"{name} out")
            return response

        return middleware

    server = A2AServer(
        load_module("echo_agent.py").agent, config=ServerConfig(port=0), middlewares=[named("a"), named("b")]
    )
    async with server, httpx.AsyncClient(timeout=WAIT) as http:
        assert server.url is not None
        await bounded(http.get(server.url + CARD_PATH))
    assert order == ["a in", "b in", "b out", "a out"]


def test_a_subclass_may_not_change_serving_by_overriding_app() -> None:
    with pytest.raises(TypeError, match=r"overrides app\(\).*middlewares="):

        class Overriding(A2AServer):
            def app(self) -> web.Application:
                return super().app()


async def test_unknown_path_is_404(served: tuple[str, A2AServer], http: httpx.AsyncClient) -> None:
    url, _ = served
    for method, path in [("GET", "/nothing"), ("POST", "/a2a"), ("GET", "/a2a/restless"), ("POST", "/a2a/jsonrpc/x")]:
        response = await bounded(http.request(method, url + path, headers=VERSION))
        assert response.status_code == 404, (method, path, response.status_code)


async def test_wrong_method_is_405_with_allow(served: tuple[str, A2AServer], http: httpx.AsyncClient) -> None:
    url, _ = served
    response = await bounded(http.put(url + JSONRPC_PATH, headers=VERSION, content=b"{}"))
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    response = await bounded(http.post(url + CARD_PATH, headers=VERSION))
    assert response.status_code == 405
    assert {m.strip() for m in response.headers["Allow"].split(",")} == {"GET", "HEAD"}


async def test_head_of_the_card_has_its_headers_and_no_body(
    served: tuple[str, A2AServer], http: httpx.AsyncClient
) -> None:
    url, _ = served
    got = await bounded(http.get(url + CARD_PATH))
    head = await bounded(http.head(url + CARD_PATH))
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["ETag"] == got.headers["ETag"]
    assert json.loads(got.content)["name"] == "Echo"


async def test_expect_100_continue_gets_the_interim_answer(served: tuple[str, A2AServer]) -> None:
    url, _ = served
    port = int(url.rsplit(":", 1)[1])
    body = rpc_body("after the interim answer")
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), WAIT)
    try:
        writer.write(
            f"POST {JSONRPC_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n".encode()
        )
        await writer.drain()
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
        assert interim.startswith(b"HTTP/1.1 100"), interim
        writer.write(body)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT)
        assert head.startswith(b"HTTP/1.1 200"), head
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        answer = json.loads(await asyncio.wait_for(reader.readexactly(length), WAIT))
        assert answer["result"]["message"]["parts"][0]["text"] == "after the interim answer"
    finally:
        writer.close()


@pytest.mark.aiohttp_host_only(reason="aiohttp middlewares and Expect handling are the aiohttp host's")
async def test_unknown_expectation_is_417(served: tuple[str, A2AServer], http: httpx.AsyncClient) -> None:
    url, _ = served
    headers = {**VERSION, "Expect": "something-else", "Content-Type": "application/json"}
    response = await bounded(http.post(url + JSONRPC_PATH, headers=headers, content=rpc_body("x")))
    assert response.status_code == 417


async def test_chunked_body_over_a_mebibyte_within_the_limit_is_served(
    served: tuple[str, A2AServer], http: httpx.AsyncClient
) -> None:
    """The limit is the configured one (3 MiB here), not aiohttp's 1 MiB default, also for a body
    whose length is not declared in advance."""
    url, _ = served
    text = "z" * (2 * 1024 * 1024)
    body = rpc_body(text)

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(body), 64 * 1024):
            yield body[i : i + 64 * 1024]

    headers = {**VERSION, "Content-Type": "application/json"}
    response = await bounded(http.post(url + JSONRPC_PATH, headers=headers, content=chunks()))
    assert response.status_code == 200
    assert response.json()["result"]["message"]["parts"][0]["text"] == text


async def test_rest_paths_resolve_under_the_prefix(served: tuple[str, A2AServer], http: httpx.AsyncClient) -> None:
    url, _ = served
    message = {"message": {"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": "over REST"}]}}
    response = await bounded(http.post(url + "/a2a/rest/message:send", headers=VERSION, json=message))
    assert response.status_code == 200, response.text
    assert response.json()["message"]["parts"][0]["text"] == "over REST"
    message["message"]["messageId"] = new_id()
    tenant = await bounded(http.post(url + "/a2a/rest/acme/message:send", headers=VERSION, json=message))
    assert tenant.status_code == 200, tenant.text


async def raw_exchange(url: str, head: str, body: bytes) -> bytes:
    """Send one hand-made HTTP/1.1 request and return the status line."""
    port = int(url.rsplit(":", 1)[1])
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), WAIT)
    try:
        writer.write(head.encode() + body)
        await writer.drain()
        return await asyncio.wait_for(reader.readline(), WAIT)
    finally:
        writer.close()


async def test_an_empty_expect_header_is_no_expectation(served: tuple[str, A2AServer]) -> None:
    url, _ = served
    body = rpc_body("no expectation")
    head = (
        f"POST {JSONRPC_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nExpect: \r\n\r\n"
    )
    status = await raw_exchange(url, head, body)
    assert status.startswith(b"HTTP/1.1 200"), status


@pytest.mark.parametrize("path", ["/.well-known%2Fagent-card.json", "/a2a%2Fjsonrpc", "/a2a/rest%2Fmessage:send"])
async def test_an_encoded_slash_never_makes_an_endpoint_path(
    served: tuple[str, A2AServer], http: httpx.AsyncClient, path: str
) -> None:
    url, _ = served
    method = "GET" if "card" in path else "POST"
    response = await bounded(http.request(method, url + path, headers=VERSION, content=rpc_body("x")))
    assert response.status_code == 404, response.text


async def test_head_of_the_websocket_path_is_not_a_wrong_method(
    served: tuple[str, A2AServer], http: httpx.AsyncClient
) -> None:
    url, server = served
    response = await bounded(http.head(url + server.config.websocket.path, headers=VERSION))
    assert response.status_code == 426  # served: it asks for an upgrade


@pytest.mark.parametrize("how", ["start", "embedded"])
async def test_the_websocket_endpoint_may_share_the_jsonrpc_path(how: str) -> None:
    agent = load_module("echo_agent.py").agent
    config = ServerConfig(port=0)
    config.websocket.path = JSONRPC_PATH
    server = A2AServer(agent, config=config)
    async with contextlib.AsyncExitStack() as stack:
        if how == "start":
            await stack.enter_async_context(server)
            assert server.url is not None
            url = server.url
        else:
            url = await stack.enter_async_context(embedded(server.app()))
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=WAIT))
        session = await stack.enter_async_context(aiohttp.ClientSession())
        response = await bounded(http.post(url + JSONRPC_PATH, headers=VERSION, content=rpc_body("post")))
        assert response.json()["result"]["message"]["parts"][0]["text"] == "post"
        ws_url = url.replace("http://", "ws://") + JSONRPC_PATH
        async with session.ws_connect(ws_url, headers=VERSION) as ws:
            await ws.send_str(rpc_body("over ws").decode())
            answer = json.loads(await asyncio.wait_for(ws.receive_str(), WAIT))
        assert answer["result"]["message"]["parts"][0]["text"] == "over ws"


async def test_the_application_mounted_under_a_prefix_serves_every_binding() -> None:
    server = A2AServer(load_module("echo_agent.py").agent, config=ServerConfig(port=0))
    async with embedded(server.app(), "/agent") as base, httpx.AsyncClient(timeout=WAIT) as http:
        card = (await bounded(http.get(base + CARD_PATH))).json()
        urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
        assert urls["JSONRPC"] == base + JSONRPC_PATH, "the card names the URLs under the prefix"
        rpc = await bounded(http.post(urls["JSONRPC"], headers=VERSION, content=rpc_body("rpc")))
        assert rpc.json()["result"]["message"]["parts"][0]["text"] == "rpc"
        message = {"message": {"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": "rest"}]}}
        rest = await bounded(http.post(urls["HTTP+JSON"] + "/message:send", headers=VERSION, json=message))
        assert rest.status_code == 200, rest.text
        assert rest.json()["message"]["parts"][0]["text"] == "rest"
        unmounted = await bounded(http.post(base.removesuffix("/agent") + JSONRPC_PATH, headers=VERSION))
        assert unmounted.status_code == 404
        ws_url = urls[WEBSOCKET_BINDING]
        async with aiohttp.ClientSession() as session, session.ws_connect(ws_url, headers=VERSION) as ws:
            await ws.send_str(rpc_body("over ws").decode())
            answer = json.loads(await asyncio.wait_for(ws.receive_str(), WAIT))
        assert answer["result"]["message"]["parts"][0]["text"] == "over ws"


@pytest.mark.parametrize("how", ["start", "embedded"])
async def test_stopping_answers_a_blocking_send_in_flight_at_once(how: str) -> None:
    """The stop steps run before aiohttp waits for open requests (here up to a minute): the run
    ends CANCELED and the blocking send is answered that."""
    server = A2AServer(load_module("echo_agent.py").agent, config=ServerConfig(port=0, shutdown_timeout=60))
    store = server.handler.store
    async with contextlib.AsyncExitStack() as serving, httpx.AsyncClient(timeout=WAIT) as http:
        if how == "start":
            url = await server.start()
            serving.push_async_callback(server.stop)
        else:
            url = await serving.enter_async_context(embedded(server.app()))
        sending = asyncio.create_task(http.post(url + JSONRPC_PATH, headers=VERSION, content=rpc_body("hold:30")))

        async def working() -> bool:
            page = await store.list(TaskQuery(owner="", tenant=""))
            return any(r.task.status.state == TaskState.WORKING for r in page.records)

        await wait_until(working, what="the hold task to be WORKING")
        await bounded(serving.aclose())
        answer = (await bounded(sending)).json()
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_CANCELED"


# ---- paths: a trailing slash, and unknown paths answered in JSON ------------------------------

REST_MEDIA_TYPE = "application/a2a+json"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def rest_error_of(response: httpx.Response, status: int) -> dict[str, object]:
    """The REST error body (a ``google.rpc.Status`` with an ErrorInfo), checked whole."""
    assert response.status_code == status, (response.status_code, response.text)
    error = response.json()["error"]
    assert error["code"] == status and isinstance(error["status"], str) and error["message"], error
    assert error["details"][0]["@type"] == ERROR_INFO, error
    return dict(error)


def jsonrpc_error_of(response: httpx.Response, status: int, code: int, request_id: object = None) -> str:
    """A JSON-RPC error response, checked whole; returns its message."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["Content-Type"] == "application/json", response.headers
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id, body
    assert body["error"]["code"] == code and body["error"]["data"][0]["@type"] == ERROR_INFO, body
    return str(body["error"]["message"])


async def test_every_endpoint_is_served_with_a_trailing_slash(
    served: tuple[str, A2AServer], http: httpx.AsyncClient
) -> None:
    """A client that posts to the card's URL with a trailing slash (``/a2a/jsonrpc/``) reaches
    the same endpoint (issue: "Accept the URL with and without the trailing slash on every
    endpoint (JSON-RPC, REST paths, WebSocket)")."""
    url, server = served
    rpc = await bounded(http.post(url + JSONRPC_PATH + "/", headers=VERSION, content=rpc_body("slash")))
    assert rpc.json()["result"]["message"]["parts"][0]["text"] == "slash"
    message = {"message": {"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": "stream:1"}]}}
    sent = await bounded(http.post(url + "/a2a/rest/message:send/", headers=VERSION, json=message))
    assert sent.status_code == 200, sent.text
    task_id = sent.json()["task"]["id"]
    listed = await bounded(http.get(url + "/a2a/rest/tasks/", headers=VERSION))
    assert task_id in [task["id"] for task in listed.json()["tasks"]]
    got = await bounded(http.get(url + f"/a2a/rest/tasks/{task_id}/", headers=VERSION))
    assert got.json()["id"] == task_id
    tenant = await bounded(http.get(url + "/a2a/rest/acme/tasks/", headers=VERSION))
    assert tenant.status_code == 200 and tenant.json()["tasks"] == []
    card = await bounded(http.get(url + CARD_PATH + "/"))
    assert card.json()["name"] == "Echo"
    ws_url = url.replace("http://", "ws://") + server.config.websocket.path + "/"
    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url, headers=VERSION) as ws:
        await ws.send_str(rpc_body("over ws").decode())
        answer = json.loads(await asyncio.wait_for(ws.receive_str(), WAIT))
    assert answer["result"]["message"]["parts"][0]["text"] == "over ws"


#: (HTTP method, path, status, family): "rest" paths answer REST's error body in REST's media
#: type, "jsonrpc" paths (the JSON-RPC and WebSocket endpoints) a JSON-RPC error object, other
#: paths a ``google.rpc.Status`` body as JSON.
UNKNOWN_PATHS = [
    ("GET", "/a2a/rest", 404, "rest"),
    ("GET", "/a2a/rest/", 404, "rest"),
    ("GET", "/a2a/rest/nothing/here", 404, "rest"),
    ("POST", "/a2a/rest/tasks/x:explode/", 404, "rest"),
    ("POST", "/a2a/jsonrpc/x", 404, "jsonrpc"),
    ("POST", "/a2a/jsonrpc//", 404, "jsonrpc"),
    ("PUT", "/a2a/jsonrpc", 405, "jsonrpc"),
    ("DELETE", "/a2a/jsonrpc/", 405, "jsonrpc"),
    ("POST", "/a2a/ws", 405, "jsonrpc"),
    ("GET", "/a2a/ws/more", 404, "jsonrpc"),
    ("GET", "/a2a", 404, "status"),
    ("GET", "/a2a/", 404, "status"),
    ("POST", "/a2a/restless", 404, "status"),
    ("GET", "/nothing", 404, "status"),
    ("POST", CARD_PATH, 405, "status"),
]


@pytest.mark.parametrize(("method", "path", "status", "family"), UNKNOWN_PATHS)
async def test_an_unknown_path_is_answered_in_json(
    served: tuple[str, A2AServer], http: httpx.AsyncClient, method: str, path: str, status: int, family: str
) -> None:
    """Issue: "answer every unknown path on an A2A prefix with a JSON error body, never plain
    text" (clients crash on a ``text/plain`` body). JSON-RPC 2.0 §5: the ``id`` "MUST be Null"
    when it could not be detected, as here: nothing was read."""
    url, _ = served
    response = await bounded(http.request(method, url + path, headers=VERSION, content=b"{}"))
    assert not response.headers["Content-Type"].startswith("text/"), response.headers
    if family == "rest":
        assert response.headers["Content-Type"] == REST_MEDIA_TYPE
        error = rest_error_of(response, status)
        assert error["details"][0]["reason"] == "METHOD_NOT_FOUND"  # type: ignore[index]
    elif family == "jsonrpc":
        jsonrpc_error_of(response, status, -32601)
    else:
        assert response.headers["Content-Type"] == "application/json"
        rest_error_of(response, status)
    if status == 405:
        assert response.headers["Allow"], "a 405 names the methods allowed"


@pytest.mark.aiohttp_host_only(reason="aiohttp middlewares and Expect handling are the aiohttp host's")
async def test_an_unknown_expectation_is_answered_in_json(
    served: tuple[str, A2AServer], http: httpx.AsyncClient
) -> None:
    url, _ = served
    headers = {**VERSION, "Expect": "something-else", "Content-Type": "application/json"}
    response = await bounded(http.post(url + JSONRPC_PATH + "/", headers=headers, content=rpc_body("x")))
    assert "Unknown Expect" in jsonrpc_error_of(response, 417, -32600)


async def test_under_a_mount_prefix_paths_are_served_and_refused_alike() -> None:
    """Embedded under a prefix, the same answers: a trailing slash reaches the endpoint, an
    unknown path under the prefix is a JSON error."""
    server = A2AServer(load_module("echo_agent.py").agent, config=ServerConfig(port=0))
    async with embedded(server.app(), "/agent") as base, httpx.AsyncClient(timeout=WAIT) as http:
        rpc = await bounded(http.post(base + JSONRPC_PATH + "/", headers=VERSION, content=rpc_body("mounted")))
        assert rpc.json()["result"]["message"]["parts"][0]["text"] == "mounted"
        listed = await bounded(http.get(base + "/a2a/rest/tasks/", headers=VERSION))
        assert listed.status_code == 200 and listed.headers["Content-Type"] == REST_MEDIA_TYPE
        for path in ("/nothing", "/a2a/elsewhere"):
            missing = await bounded(http.get(base + path, headers=VERSION))
            assert missing.headers["Content-Type"] == "application/json"
            rest_error_of(missing, 404)
        rest_missing = await bounded(http.get(base + "/a2a/rest/nothing", headers=VERSION))
        assert rest_missing.headers["Content-Type"] == REST_MEDIA_TYPE
        jsonrpc_error_of(await bounded(http.get(base + JSONRPC_PATH + "/x", headers=VERSION)), 404, -32601)


# ---- early errors: the request's own id --------------------------------------------------------


def envelope(request_id: object, method: str = "SendMessage", text: str = "early") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": send_params(text)}).encode()


@pytest.mark.parametrize("request_id", ["req-7", 7, 0], ids=["string", "integer", "zero"])
@pytest.mark.parametrize(
    "headers",
    [{}, {"A2A-Version": "0.3"}, {"A2A-Version": "2.0"}],
    ids=["missing version", "version 0.3", "version 2.0"],
)
async def test_a_refused_version_is_answered_with_the_request_id(
    served: tuple[str, A2AServer], http: httpx.AsyncClient, request_id: object, headers: dict[str, str]
) -> None:
    """JSON-RPC 2.0 §5: the response ``id`` "MUST be the same as the value of the id member in
    the Request Object"; only "if there was an error in detecting the id ... it MUST be Null".
    A request refused for its ``A2A-Version`` (A2A: VersionNotSupportedError) has a readable id."""
    url, _ = served
    response = await bounded(http.post(url + JSONRPC_PATH, headers=headers, content=envelope(request_id)))
    assert "A2A-Version" in jsonrpc_error_of(response, 200, -32009, request_id)


async def test_a_refused_stream_is_answered_with_the_request_id(
    served: tuple[str, A2AServer], http: httpx.AsyncClient
) -> None:
    url, _ = served
    body = envelope("s-1", "SendStreamingMessage", "stream:1")
    response = await bounded(http.post(url + JSONRPC_PATH, headers={"Accept": "text/event-stream"}, content=body))
    jsonrpc_error_of(response, 200, -32009, "s-1")


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ListTasks"}', b"[1, 2]", b'"text"'],
    ids=["not JSON", "id is an object", "a batch", "a string"],
)
async def test_an_unreadable_id_on_a_refused_request_is_null(
    served: tuple[str, A2AServer], http: httpx.AsyncClient, body: bytes
) -> None:
    """JSON-RPC 2.0 §5: null when the id cannot be detected; the refusal itself stays the
    version's (it is checked first). (Without a version the request is served in 0.3.)"""
    url, _ = served
    response = await bounded(http.post(url + JSONRPC_PATH, content=body, headers={"A2A-Version": "2.0"}))
    jsonrpc_error_of(response, 200, -32009, None)


async def test_a_body_over_the_limit_is_not_read_for_its_id(
    served: tuple[str, A2AServer], http: httpx.AsyncClient
) -> None:
    """A body too large is never read, not even for its id: ``null``."""
    url, server = served
    body = envelope("big", text="z" * (server.config.max_body_bytes + 1))
    response = await bounded(http.post(url + JSONRPC_PATH, content=body, headers={"A2A-Version": "2.0"}))
    jsonrpc_error_of(response, 200, -32009, None)


@pytest.fixture(params=["start", "embedded"])
async def secured(request: pytest.FixtureRequest, serve: StartServer) -> AsyncIterator[str]:
    """The echo agent behind a bearer token, started or embedded; yields the base URL."""
    agent = load_module("echo_agent.py").agent
    auth = [BearerAuth(credentials={"tok-a": "alice"})]
    if request.param == "start":
        server = await serve(agent, auth=auth)
        assert server.url is not None
        yield server.url
    else:
        async with embedded(A2AServer(agent, auth=auth).app()) as url:
            yield url


@pytest.mark.parametrize(
    "credentials",
    [{}, {"Authorization": "Bearer tok-x"}, {"Authorization": "Basic dG9rLWE6"}],
    ids=["none", "wrong token", "wrong scheme"],
)
async def test_bad_credentials_are_answered_with_the_request_id(
    secured: str, http: httpx.AsyncClient, credentials: dict[str, str]
) -> None:
    """A request refused for its credentials (A2A: 401 with a challenge) still has a readable
    id, which JSON-RPC 2.0 §5 says the answer carries."""
    response = await bounded(
        http.post(secured + JSONRPC_PATH, headers={**VERSION, **credentials}, content=envelope(41))
    )
    jsonrpc_error_of(response, 401, -32000, 41)
    assert "Bearer" in response.headers["WWW-Authenticate"]
    right = await bounded(
        http.post(secured + JSONRPC_PATH, headers={**VERSION, "Authorization": "Bearer tok-a"}, content=envelope(42))
    )
    assert right.json()["id"] == 42 and "result" in right.json()


# ---- REST errors carry the media type of REST successes ---------------------------------------


async def test_rest_errors_have_the_content_type_of_successes(
    secured: str, http: httpx.AsyncClient, served: tuple[str, A2AServer]
) -> None:
    """A2A's HTTP+JSON binding answers in ``application/a2a+json``; its errors too (issue:
    "REST error bodies carry the same content type as successes"): 400, 401, 404, 413."""
    url, server = served
    success = await bounded(http.get(url + "/a2a/rest/tasks", headers=VERSION))
    assert success.status_code == 200
    media_type = success.headers["Content-Type"]
    assert media_type == REST_MEDIA_TYPE
    too_big = b'{"message": "' + b"z" * server.config.max_body_bytes + b'"}'
    refusals = [
        (await bounded(http.get(url + "/a2a/rest/tasks")), 400),  # no version
        (await bounded(http.get(url + "/a2a/rest/tasks/no-such-task", headers=VERSION)), 404),
        (await bounded(http.get(url + "/a2a/rest/tasks/x/nothing", headers=VERSION)), 404),
        (await bounded(http.delete(url + "/a2a/rest/tasks/x", headers=VERSION)), 404),  # wrong method
        (await bounded(http.post(url + "/a2a/rest/message:send", headers=VERSION, content=too_big)), 413),
        (await bounded(http.get(secured + "/a2a/rest/tasks", headers=VERSION)), 401),
    ]
    for response, status in refusals:
        assert response.headers["Content-Type"] == media_type, (status, response.headers)
        rest_error_of(response, status)
