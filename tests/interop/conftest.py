"""Fixtures of the interop tests: the reference SDK's venv and one server of each kind per session.

Nothing here skips: the SDK venv is built on first use (that needs the package registry),
and a failure to build it or to start a server is an error of every test that needs it.
Each server is a subprocess started once per session (per xdist worker) and stopped, by its
PID, at the end.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The helpers are plain modules next to this file (pytest's default "prepend" import mode
# puts this directory on sys.path; make sure of it for the other modes too).
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import our_env  # noqa: E402
import sdk_env  # noqa: E402
from our_env import AuthServer  # noqa: E402


@pytest.fixture(scope="session")
def sdk_python() -> Path:
    """The SDK venv's python, built on first use (a few seconds warm, longer cold)."""
    return sdk_env.sdk_python()


@pytest.fixture(scope="session")
def sdk_server_url(sdk_python: Path) -> Iterator[str]:
    """The reference SDK's echo agent (tests/interop/sdk_echo_server.py), both bindings at one URL."""
    proc = sdk_env.start_sdk_server()
    try:
        yield sdk_env.wait_ready(proc)
    finally:
        sdk_env.stop(proc)


@pytest.fixture(scope="session")
def our_server_url() -> Iterator[str]:
    """``a2a serve examples/echo_agent.py:agent`` on a free port, no auth."""
    # Push off, as on the reference server it is compared with (a2a serve offers it by default).
    proc, url = our_env.start_our_server("--no-push")
    try:
        yield url
    finally:
        sdk_env.stop(proc)


@pytest.fixture(scope="session")
def our_auth_server() -> Iterator[AuthServer]:
    """The same, with ``--auth bearer`` and one token in ``$A2A_BEARER_TOKENS``."""
    token = secrets.token_urlsafe(24)
    proc, url = our_env.start_our_server("--auth", "bearer", env={"A2A_BEARER_TOKENS": f"interop:{token}"})
    try:
        yield AuthServer(url, token)
    finally:
        sdk_env.stop(proc)


# --- The peer matrix (tests/interop/peers/, tests/interop/test_peer_*.py) ---------------------
# Each peer's environment is built on first use under .cache/peers (cached by its pins) and
# each server is started once per session, like the reference SDK's above.

from concurrent.futures import ThreadPoolExecutor  # noqa: E402

from peers import adk_env, fasta2a_env, js03_env, js_env, langgraph_env, ours, python_a2a_env  # noqa: E402
from peers import common as peer_common  # noqa: E402

#: The environment each peer test file needs, by the file's name.
_PEER_BUILDS = {
    "test_peer_js_": js_env.project,
    "test_peer_js03_": js03_env.project,
    "test_peer_fasta2a": fasta2a_env.python,
    "test_peer_python_a2a": python_a2a_env.python,
}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start building the collected peers' environments at once, side by side.

    A cold build is mostly waiting on the package registry (ADK's venv about a minute), so
    building them in parallel while the first tests run saves most of it; a warm check is a
    marker read. The fixtures call the same builders, which lock: a fixture whose environment
    is still being built waits for it, and a build that failed here is retried (and its error
    raised) there.
    """
    if session.config.option.collectonly:
        return
    items = session.items  # after deselection (-k, -m): only what will run
    wanted = {build for item in items for prefix, build in _PEER_BUILDS.items() if item.path.name.startswith(prefix)}
    # The ADK tests run once per release (the ``adk`` fixture's params): build the ones selected.
    callspecs = [getattr(item, "callspec", None) for item in items]
    wanted |= {spec.params["adk"].python for spec in callspecs if spec is not None and "adk" in spec.params}
    if wanted:
        pool = ThreadPoolExecutor(max_workers=len(wanted), thread_name_prefix="peer-env")
        for build in wanted:
            pool.submit(build)
        pool.shutdown(wait=False)


@pytest.fixture(scope="session")
def js_project() -> Path:
    """The @a2a-js/sdk node project (npm install on first use)."""
    return js_env.project()


@pytest.fixture(scope="session")
def js_server_url(js_project: Path) -> Iterator[str]:
    """The JS SDK echo agent (peers/js/echo_server.mjs): JSON-RPC and HTTP+JSON, no auth."""
    with peer_common.serving(js_env.start_server()) as url:
        yield url


@pytest.fixture(scope="session")
def js_auth_server(js_project: Path) -> Iterator[AuthServer]:
    """The same agent requiring one bearer token on both bindings."""
    token = secrets.token_urlsafe(24)
    with peer_common.serving(js_env.start_server(token=token)) as url:
        yield AuthServer(url, token)


@pytest.fixture(scope="session")
def our_greeter_url() -> Iterator[str]:
    """``a2a serve examples/input_required_agent.py:agent``: the input-required round trip."""
    with peer_common.serving(ours.start(ours.GREETER, "--no-push")) as url:
        yield url


@pytest.fixture(scope="session", params=adk_env.RELEASES, ids=str)
def adk(request: pytest.FixtureRequest) -> adk_env.AdkRelease:
    """Each pinned Google ADK release in turn (2.x on a2a-sdk 1.x, 1.x on a2a-sdk 0.3), its
    venv built (pip install on first use)."""
    release: adk_env.AdkRelease = request.param
    release.python()
    return release


@pytest.fixture(scope="session")
def adk_server_url(adk: adk_env.AdkRelease) -> Iterator[str]:
    """An ADK agent (no model) served by ADK's ``to_a2a()`` with ADK's own card
    (peers/adk/echo_server.py)."""
    with peer_common.serving(adk.start_server()) as url:
        yield url


@pytest.fixture(scope="session")
def adk_streaming_url(adk: adk_env.AdkRelease, adk_server_url: str) -> Iterator[str]:
    """An ADK agent whose card declares streaming: ADK 2.x's own card does; ADK 1.x's does
    not (its server then refuses ``message/stream``), so that one gets a card saying it does."""
    if adk.streams_by_default:
        yield adk_server_url
        return
    with peer_common.serving(adk.start_server("--streaming")) as url:
        yield url


@pytest.fixture(scope="session")
def adk_auth_server(adk: adk_env.AdkRelease) -> Iterator[AuthServer]:
    """The same ADK agent behind a bearer token check (``to_a2a()`` has none of its own), with
    a card declaring streaming (ADK 1.x's own does not)."""
    token = secrets.token_urlsafe(24)
    streaming = () if adk.streams_by_default else ("--streaming",)
    with peer_common.serving(adk.start_server(*streaming, token=token)) as url:
        yield AuthServer(url, token)


@pytest.fixture(scope="session")
def langgraph_server() -> Iterator[langgraph_env.LangGraphServer]:
    """``langgraph dev`` (in memory) serving a trivial graph; its A2A endpoint is ``a2a_url``."""
    proc, server = langgraph_env.start_server()
    try:
        yield server
    finally:
        langgraph_env.stop(proc)


@pytest.fixture(scope="session")
def fasta2a_python() -> Path:
    """The fasta2a venv's python (pip install on first use)."""
    return fasta2a_env.python()


@pytest.fixture(scope="session")
def fasta2a_server_url(fasta2a_python: Path) -> Iterator[str]:
    """An agent on fasta2a's server without a model (peers/fasta2a/echo_server.py)."""
    with peer_common.serving(fasta2a_env.start_server()) as url:
        yield url


@pytest.fixture(scope="session")
def fasta2a_auth_server(fasta2a_python: Path) -> Iterator[AuthServer]:
    """The same fasta2a agent behind a bearer token check (fasta2a has none of its own)."""
    token = secrets.token_urlsafe(24)
    with peer_common.serving(fasta2a_env.start_server(token=token)) as url:
        yield AuthServer(url, token)


@pytest.fixture(scope="session")
def our_modes_server_url() -> Iterator[str]:
    """``a2a serve peers/modes_agent.py:agent``: the echo agent with its skill's media types declared."""
    with peer_common.serving(ours.start(ours.MODES, "--no-push")) as url:
        yield url


@pytest.fixture(scope="session")
def js03_project() -> Path:
    """The @a2a-js/sdk 0.3 node project (npm install on first use), beside the 1.3 one."""
    return js03_env.project()


@pytest.fixture(scope="session")
def js03_server_url(js03_project: Path) -> Iterator[str]:
    """The JS SDK 0.3 echo agent (peers/js03/echo_server.mjs): 0.3 JSON-RPC and HTTP+JSON."""
    with peer_common.serving(js03_env.start_server()) as url:
        yield url


@pytest.fixture(scope="session")
def js03_auth_server(js03_project: Path) -> Iterator[AuthServer]:
    """The same 0.3 agent requiring one bearer token on both bindings (its card declares it)."""
    token = secrets.token_urlsafe(24)
    with peer_common.serving(js03_env.start_server(token=token)) as url:
        yield AuthServer(url, token)


@pytest.fixture(scope="session")
def python_a2a_python() -> Path:
    """The python-a2a venv's python (pip install on first use)."""
    return python_a2a_env.python()


@pytest.fixture(scope="session")
def python_a2a_server_url(python_a2a_python: Path) -> Iterator[str]:
    """python-a2a's default echo agent on its Flask server (peers/python_a2a/echo_server.py)."""
    with peer_common.serving(python_a2a_env.start_server()) as url:
        yield url
