"""Skills: a follow-up goes to the skill that owns the task; typed arguments, validated, and
their schema in the card; ``client.send(skill=, arguments=)`` and ``skillId`` metadata pick a skill.

The spec leaves skill selection to the agent ("AgentSkill: a distinct capability or function
that an agent can perform"); what is protocol behaviour here is a2a-net's contract, documented in
protocol.md ("Skills: routing and arguments"), and it holds on every binding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from a2a import A2AClient, A2AServer, ServerConfig
from a2a.errors import InvalidParamsError
from a2a.metadata import OWNER_SKILL_KEY
from a2a.server.authoring.agent import SKILL_ARGUMENTS_EXTENSION
from a2a.server.backends.base import open_backend
from a2a.types import Message, Task, TaskState

from .conftest import OpenClient, StartServer
from .helpers import bounded
from .skills_agent import agent as shop


@pytest.fixture
async def client(serve: StartServer, open_client: OpenClient) -> A2AClient:
    return await open_client(await serve(shop))


async def _task(reply: object) -> Task:
    assert isinstance(reply, Task), reply
    return reply


async def test_a_follow_up_goes_to_the_skill_that_owns_the_task(client: A2AClient) -> None:
    """A multi-skill agent asks "Which size?" in one skill; the answer must reach that skill,
    not the default one (which would answer "chat: large")."""
    asked = await _task(await bounded(client.send("a shirt", skill="order")))
    assert asked.status.state == TaskState.INPUT_REQUIRED
    assert (asked.metadata or {}).get(OWNER_SKILL_KEY) == "order", "the owner is kept with the task"
    done = await _task(await bounded(client.send("large", task_id=asked.id)))
    assert done.status.state == TaskState.COMPLETED
    assert done.status.message is not None and done.status.message.text == "order: size large"


async def test_a_follow_up_naming_another_skill_is_refused(client: A2AClient) -> None:
    asked = await _task(await bounded(client.send("a shirt", skill="order")))
    with pytest.raises(InvalidParamsError) as caught:
        await bounded(client.send("large", task_id=asked.id, skill="chat"))
    assert "order" in caught.value.message
    still = await bounded(client.get_task(asked.id))
    assert still.status.state == TaskState.INPUT_REQUIRED, "a refused follow-up leaves the task as it was"


async def test_typed_arguments_fill_the_parameters(client: A2AClient) -> None:
    done = await _task(await bounded(client.send("", skill="forecast", arguments={"city": "Paris"})))
    assert done.status.state == TaskState.COMPLETED
    assert done.artifacts and done.artifacts[0].parts[0].data == {"city": "Paris", "days": 3}
    done = await _task(await bounded(client.send("", skill="forecast", arguments={"city": "Oslo", "days": 5})))
    assert done.artifacts and done.artifacts[0].parts[0].data == {"city": "Oslo", "days": 5}


@pytest.mark.parametrize(
    ("arguments", "named"),
    [({"city": "Paris", "days": "three"}, "days"), ({"days": 2}, "city"), ({"city": "Rome", "weeks": 1}, "weeks")],
)
async def test_a_bad_argument_is_invalid_params_naming_it(
    client: A2AClient, arguments: dict[str, object], named: str
) -> None:
    """-32602 (InvalidParamsError) before the agent runs, naming the argument; no task is made."""
    before = len((await bounded(client.list_tasks())).tasks)
    with pytest.raises(InvalidParamsError) as caught:
        await bounded(client.send("", skill="forecast", arguments=arguments))
    assert caught.value.code == -32602
    assert named in caught.value.message and "forecast" in caught.value.message
    assert len((await bounded(client.list_tasks())).tasks) == before


async def test_a_follow_up_keeps_the_arguments_the_task_started_with(client: A2AClient) -> None:
    asked = await _task(await bounded(client.send("", skill="book", arguments={"people": 4})))
    assert asked.status.state == TaskState.INPUT_REQUIRED
    done = await _task(await bounded(client.send("Friday", task_id=asked.id)))
    assert done.status.message is not None and done.status.message.text == "4 people on Friday"


async def test_the_arguments_schema_is_in_the_card(client: A2AClient) -> None:
    card = await bounded(client.get_card())
    (extension,) = [e for e in card.capabilities.extensions or [] if e.uri == SKILL_ARGUMENTS_EXTENSION]
    assert not extension.required
    schemas = (extension.params or {})["skills"]
    assert set(schemas) == {"chat", "forecast", "book"}, "typed skills only (order takes the RequestContext)"
    forecast = schemas["forecast"]
    assert forecast["type"] == "object" and forecast["required"] == ["city"]
    assert forecast["properties"]["city"] == {"type": "string"}
    assert forecast["properties"]["days"] == {"type": "integer", "default": 3}
    assert schemas["book"]["required"] == ["people"], "the RequestContext parameter is not an argument"


async def test_skill_id_in_message_or_request_metadata_picks_the_skill(client: A2AClient) -> None:
    by_request = await _task(await bounded(client.send("a hat", metadata={"skillId": "order"})))
    assert by_request.status.state == TaskState.INPUT_REQUIRED
    by_skill = await _task(await bounded(client.send("a hat", skill="order")))
    assert by_skill.status.state == TaskState.INPUT_REQUIRED
    plain = await bounded(client.send("hello"))
    text = plain.text if isinstance(plain, Message) else (await _task(plain)).artifacts[0].parts[0].text  # type: ignore[index]
    assert text == "chat: hello", "without a skill the default (first) skill answers"


async def _send_to_a_fresh_server(store_url: str, text: str, **kwargs: Any) -> Task:
    """Start a server on ``store_url``, send, stop it."""
    backend = open_backend(store_url)
    async with (
        A2AServer(shop, config=ServerConfig(port=0), backend=backend) as server,
        A2AClient(server.url or "") as client,
    ):
        return await _task(await bounded(client.send(text, **kwargs)))


async def test_the_owning_skill_survives_a_restart(tmp_path: Path) -> None:
    """The owner is kept with the task in the store: a new server on the same file routes the
    follow-up to it."""
    url = f"sqlite:///{tmp_path / 'tasks.db'}"
    asked = await _send_to_a_fresh_server(url, "a shirt", skill="order")
    assert asked.status.state == TaskState.INPUT_REQUIRED
    done = await _send_to_a_fresh_server(url, "small", task_id=asked.id)
    assert done.status.message is not None and done.status.message.text == "order: size small"
