"""The four config operations of PushNotifier: create (ids, checks, caps), get, list (pages), delete."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from a2a.errors import InvalidParamsError
from a2a.server.push import InMemoryPushStore, PushNotifier
from a2a.types import AuthenticationInfo
from tests.push.helpers import FAST, LOOPBACK, config

URL = "http://127.0.0.1:9/hook"  # never contacted: nothing is notified in these tests


@pytest.fixture
def notifier() -> PushNotifier:
    return PushNotifier(InMemoryPushStore(), guard=LOOPBACK, policy=replace(FAST, max_configs_per_task=5))


async def test_create_assigns_an_id_and_sets_the_task(notifier: PushNotifier) -> None:
    made = await notifier.create("t1", "alice", "acme", config(URL))
    assert made.id and made.task_id == "t1" and made.tenant == "acme" and made.url == URL
    assert await notifier.get("t1", made.id) == made
    kept = await notifier.create("t1", "alice", "", config(URL, "mine", task_id="t1"))
    assert kept.id == "mine"


async def test_create_with_an_existing_id_replaces(notifier: PushNotifier) -> None:
    await notifier.create("t1", "", "", config(URL, "c1", token="old"))
    await notifier.create("t1", "", "", config(URL, "c1", token="new"))
    page = await notifier.list("t1")
    assert [(c.id, c.token) for c in page.configs] == [("c1", "new")]


async def test_get_and_delete_of_missing_configs(notifier: PushNotifier) -> None:
    assert await notifier.get("t1", "nope") is None
    assert not await notifier.delete("t1", "nope")
    await notifier.create("t1", "", "", config(URL, "c1"))
    assert await notifier.delete("t1", "c1")
    assert await notifier.get("t1", "c1") is None


async def test_list_pages(notifier: PushNotifier) -> None:
    for name in ("e", "a", "d", "b", "c"):
        await notifier.create("t1", "", "", config(URL, name))
    await notifier.create("t2", "", "", config(URL, "other"))
    seen, token, pages = [], "", 0
    while True:
        page = await notifier.list("t1", page_size=2, page_token=token)
        seen += [c.id for c in page.configs]
        pages += 1
        if not page.next_page_token:
            break
        token = page.next_page_token
    assert seen == ["a", "b", "c", "d", "e"] and pages == 3
    assert [c.id for c in (await notifier.list("t1", page_size=0)).configs] == ["a", "b", "c", "d", "e"]
    assert (await notifier.list("none")).configs == []
    assert (await notifier.list("none")).next_page_token == ""


@pytest.mark.parametrize(("size", "token"), [(101, None), (-1, None), (None, "%%%not-base64")])
async def test_list_refuses_bad_page_parameters(notifier: PushNotifier, size: int | None, token: str | None) -> None:
    with pytest.raises(InvalidParamsError):
        await notifier.list("t1", page_size=size, page_token=token)


async def test_configs_per_task_are_capped(notifier: PushNotifier) -> None:
    for i in range(5):
        await notifier.create("t1", "", "", config(URL, f"c{i}"))
    with pytest.raises(InvalidParamsError, match="already has 5 push notification configs"):
        await notifier.create("t1", "", "", config(URL, "c5"))
    await notifier.create("t1", "", "", config(URL, "c0"))  # replacing is fine at the cap


@pytest.mark.parametrize(
    "bad",
    [
        {"task_id": "another-task"},
        {"id": "x" * 129},
        {"id": "has space"},
        {"token": "tok\r\nX-Evil: 1"},
        {"authentication": AuthenticationInfo(scheme="Bearer x", credentials="c")},
        {"authentication": AuthenticationInfo(scheme="Bearer", credentials="c\nX-Evil: 1")},
        {"authentication": AuthenticationInfo(scheme="", credentials="c")},
    ],
)
async def test_create_refuses_bad_fields(notifier: PushNotifier, bad: dict[str, object]) -> None:
    fields = {"id": "c1", **bad}
    config_id = fields.pop("id")
    with pytest.raises(InvalidParamsError) as caught:
        await notifier.create("t1", "", "", config(URL, config_id, **fields))  # type: ignore[arg-type]
    assert "Evil" not in str(caught.value)
    assert await notifier.list("t1") == (await notifier.list("empty"))


async def test_a_sqlite_file_from_before_dialects_reads_its_configs_as_1_0(tmp_path: Path) -> None:
    """A push store file written before ``push_configs.dialect`` existed gets the column on
    open; its configs are 1.0's."""
    import sqlite3
    from contextlib import closing

    from a2a.protocol.codec import encode
    from a2a.server.backends.sqlite.push import SQLitePushStore
    from a2a.types import TaskPushNotificationConfig

    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "CREATE TABLE push_configs (task_id TEXT NOT NULL, config_id TEXT NOT NULL, owner TEXT NOT NULL, "
            "tenant TEXT NOT NULL, failures INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0, "
            "body BLOB NOT NULL, PRIMARY KEY (task_id, config_id))"
        )
        body = encode(TaskPushNotificationConfig(url="https://hooks.example/a", id="c1", task_id="t1"))
        conn.execute(
            "INSERT INTO push_configs (task_id, config_id, owner, tenant, body) VALUES ('t1', 'c1', '', '', ?)", (body,)
        )
    store = SQLitePushStore(path)
    try:
        got = await store.get_config("t1", "c1")
        assert got is not None and got.dialect == "" and got.config.url == "https://hooks.example/a"
    finally:
        await store.close()
