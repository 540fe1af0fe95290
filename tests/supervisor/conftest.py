"""Fixtures for the supervisor's tests: a checkpoint database per test, fast retries."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checkpoints go to this test's directory; no model is picked up from the environment."""
    monkeypatch.setenv("A2A_SUPERVISOR_DB", str(tmp_path / "supervisor.sqlite"))
    for name in ("A2A_MODEL", "A2A_MODEL_BASE_URL", "A2A_MODEL_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


FAST_RETRY = {"retry": {"max_attempts": 4, "initial_backoff": 0.01, "max_backoff": 0.05}}
