"""The supervisor's configuration: pydantic models, loaded from YAML or built in Python.

``load_config("supervisor.yaml")`` validates the file and, when something is wrong, raises
``ConfigError`` whose every line names the field *and* the line of the file it is on::

    supervisor.yaml:12: agents[1].timeout: Input should be greater than 0
    supervisor.yaml:3: supervisor.mode: Input should be 'plan_upfront' or 'conversational'

The same models are the Python API: ``SupervisorConfig(agents=[AgentConfig(name=..., url=...)])``.
Every section and option is described in ``supervisor/README.md``.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from a2a.ssrf import OutboundPolicy

from .strategy import DEFAULT_STRATEGY, strategy_named

__all__ = [
    "A2ADefaults",
    "AgentConfig",
    "AuthConfig",
    "BreakerConfig",
    "BudgetConfig",
    "CheckpointConfig",
    "ConfigError",
    "ConfigIssue",
    "ContextConfig",
    "FileUrlsConfig",
    "ModelConfig",
    "RetryConfig",
    "RetryOverride",
    "SkillConfig",
    "SupervisorConfig",
    "SupervisorSettings",
    "expand_env",
    "load_config",
    "parse_config",
]

Mode = Literal["plan_upfront", "conversational"]

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace ``${VAR}`` (or ``${VAR:-default}``) with the environment variable's value.

    A variable that is not set and has no default is an error naming it, never an empty string.
    """
    env = os.environ if environ is None else environ

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise ValueError(f"environment variable {name} is not set (referenced as ${{{name}}})")

    return _ENV_REF.sub(substitute, value)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RetryConfig(_Model):
    """How a failed call is retried (only failures that are safe to retry: refused, reset, 429/502/503/504)."""

    max_attempts: int = Field(4, ge=1, le=50)
    initial_backoff: float = Field(0.2, ge=0)
    max_backoff: float = Field(5.0, ge=0)
    jitter: bool = True


class RetryOverride(_Model):
    """Per-agent changes to the default retry policy (unset fields keep the default)."""

    max_attempts: int | None = Field(None, ge=1, le=50)
    initial_backoff: float | None = Field(None, ge=0)
    max_backoff: float | None = Field(None, ge=0)
    jitter: bool | None = None

    def apply(self, base: RetryConfig) -> RetryConfig:
        return base.model_copy(update=self.model_dump(exclude_none=True))


class BreakerConfig(_Model):
    """Stop sending to an agent after ``failure_threshold`` failed delegations in a row, for ``reset_after`` s."""

    failure_threshold: int = Field(3, ge=1)
    reset_after: float = Field(30.0, gt=0)


class A2ADefaults(_Model):
    """Defaults applied to every agent (each agent may override ``timeout`` and ``retry``)."""

    #: Seconds one delegation may take, from the first request to the task's final state.
    timeout: float = Field(300.0, gt=0)
    #: Seconds for one request (and for connecting a stream).
    call_timeout: float = Field(30.0, gt=0)
    #: Seconds to resolve one agent at start (card fetch, process start, module import).
    discovery_timeout: float = Field(10.0, gt=0)
    #: Seconds a card stays fresh when the agent sends no ``Cache-Control: max-age``.
    card_max_age: float = Field(300.0, ge=0)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    circuit_breaker: BreakerConfig = Field(default_factory=BreakerConfig)


class AuthConfig(_Model):
    """Credentials for one agent; sent to that agent only. Values may use ``${ENV_VAR}``."""

    type: Literal["bearer", "api_key"]
    token: SecretStr | None = None
    key: SecretStr | None = None
    #: For ``api_key``: the header to send (default: the one the card's apiKey scheme names, else X-API-Key).
    header: str | None = None

    @field_validator("token", "key", mode="before")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return expand_env(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _complete(self) -> AuthConfig:
        if self.type == "bearer" and self.token is None:
            raise ValueError("auth type 'bearer' needs 'token' (e.g. token: ${MY_AGENT_TOKEN})")
        if self.type == "api_key" and self.key is None:
            raise ValueError("auth type 'api_key' needs 'key' (e.g. key: ${MY_AGENT_KEY})")
        return self


class SkillConfig(_Model):
    """A skill as the supervisor should see it (replaces what the card says)."""

    id: str = Field(min_length=1)
    name: str | None = None
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)
    #: Media types the skill accepts; ``application/json`` means structured input (a data part).
    input_modes: list[str] | None = None


class AgentConfig(_Model):
    """One agent: exactly one of ``url``, ``command`` or ``module``."""

    name: str = Field(pattern=_NAME)
    #: Base URL of an agent served over HTTP or WebSocket; its card is fetched from it.
    url: str | None = None
    #: A stdio agent: the command line the supervisor starts (and stops), as a string or a list.
    command: str | list[str] | None = None
    #: An agent object to run in this process, as ``package.module:attribute`` or ``path/file.py:attribute``.
    module: str | None = None
    description: str | None = None
    skills: list[SkillConfig] | None = None
    auth: AuthConfig | None = None
    #: Seconds one delegation to this agent may take (default ``a2a.timeout``).
    timeout: float | None = Field(None, gt=0)
    retry: RetryOverride | None = None
    #: A required agent that cannot be reached fails the run at start; others are reported and skipped.
    required: bool = False
    #: Prefer this interface of the card (e.g. ``JSONRPC``, ``HTTP+JSON``, ``WEBSOCKET``).
    binding: str | None = None
    #: Extra environment for a ``command`` agent (values may use ``${ENV_VAR}``).
    env: dict[str, str] = Field(default_factory=dict)
    #: Working directory for a ``command`` agent.
    cwd: str | None = None
    #: The name is a stand-in (the agent was given by address only, e.g. ``--agent URL``): once
    #: its card is known the agent is renamed after the card's name (made unique).
    name_from_card: bool = False
    #: Ask before each delegation to this agent (``supervisor.hooks.ApprovalHook``; the CLI asks on
    #: the terminal, and refuses when it cannot ask).
    approval: bool = False
    #: The agent's tools for every delegation to it, sent as the message metadata ``a2a-net/tools``
    #: (an agent that takes it, like the built-in assistant, uses only those); a plan item's or the
    #: model's ``tools`` replaces it for that delegation. ``None``: not sent (the agent's own choice).
    tools: list[str] | None = None

    @field_validator("url", "module", "cwd", mode="before")
    @classmethod
    def _expand_text(cls, value: Any) -> Any:
        return expand_env(value) if isinstance(value, str) else value

    @field_validator("command", mode="before")
    @classmethod
    def _expand_command(cls, value: Any) -> Any:
        if isinstance(value, str):
            return expand_env(value)
        if isinstance(value, list):
            return [expand_env(v) if isinstance(v, str) else v for v in value]
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _expand_env_map(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: expand_env(v) if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("url")
    @classmethod
    def _url_scheme(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^(https?|wss?)://", value):
            raise ValueError(f"url must start with http://, https://, ws:// or wss:// (got {value!r})")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> AgentConfig:
        kinds = [k for k in ("url", "command", "module") if getattr(self, k)]
        if len(kinds) != 1:
            found = ", ".join(kinds) or "none"
            raise ValueError(f"agent {self.name!r} needs exactly one of url, command or module (found: {found})")
        if self.module is not None and ":" not in self.module:
            raise ValueError(f"module must be 'package.module:attribute' or 'path/file.py:attribute' ({self.module!r})")
        return self

    @property
    def kind(self) -> Literal["url", "command", "module"]:
        return "url" if self.url else "command" if self.command else "module"


class ModelConfig(_Model):
    """Any OpenAI-compatible chat endpoint (OpenAI, OpenRouter, vLLM, Ollama ...).

    The same settings as the built-in assistant agent: when this section is absent the
    environment is read (``A2A_MODEL``, ``A2A_MODEL_BASE_URL``, ``A2A_MODEL_API_KEY``).
    """

    model: str = Field(min_length=1)
    base_url: str | None = None
    #: The environment variable that holds the API key (never the key itself).
    api_key_env: str = "A2A_MODEL_API_KEY"
    temperature: float = Field(0.0, ge=0, le=2)
    timeout: float = Field(120.0, gt=0)
    #: Retries of the model call itself (by the OpenAI client: 408, 429, 5xx, connection errors).
    max_retries: int = Field(2, ge=0)
    max_output_tokens: int | None = Field(None, gt=0)
    #: Prices in USD per million tokens, to count the supervisor's own cost against the budget.
    input_cost_per_mtok: float | None = Field(None, ge=0)
    output_cost_per_mtok: float | None = Field(None, ge=0)

    @field_validator("base_url", mode="before")
    @classmethod
    def _expand_url(cls, value: Any) -> Any:
        return expand_env(value) if isinstance(value, str) else value

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ModelConfig | None:
        """The model named by ``A2A_MODEL`` (with ``A2A_MODEL_BASE_URL``), or ``None``."""
        env = os.environ if environ is None else environ
        name = env.get("A2A_MODEL")
        if not name:
            return None
        return cls(model=name, base_url=env.get("A2A_MODEL_BASE_URL") or None)


class BudgetConfig(_Model):
    """Limits for one run. When one runs out, no new delegation starts, the ones in flight are
    cancelled, and the answer is assembled from what is there, naming what is missing."""

    #: Tokens: the supervisor's model use plus what agents report in ``a2a-net/usage``.
    tokens: int | None = Field(None, gt=0)
    #: USD: the supervisor's model cost (needs the model's prices) plus the agents' reported cost.
    cost_usd: float | None = Field(None, gt=0)
    #: Seconds from the start of the run.
    wall_time: float | None = Field(None, gt=0)


class ContextConfig(_Model):
    """The context budget of one delegation: the instruction plus its dependencies' results."""

    tokens: int = Field(8000, ge=64)
    #: ``compress``: shorten dependency results by the documented rule; ``fail``: refuse the delegation.
    on_overflow: Literal["compress", "fail"] = "compress"


class FileUrlsConfig(_Model):
    """Files an agent returned by ``url``: fetched by the supervisor when the delegation ends, so
    later delegations get the bytes inline (``supervisor.file_urls``)."""

    fetch: bool = True
    #: The most bytes fetched for the files of one delegation together; a file past it stays a URL, with a note.
    max_bytes: int = Field(1024 * 1024, ge=1)
    #: Seconds for all the fetches of one delegation's files together.
    timeout: float = Field(20.0, gt=0)
    #: CIDRs, addresses and host names admitted besides public addresses (as ``--push-allow``).
    allow: list[str] = Field(default_factory=list)

    @field_validator("allow")
    @classmethod
    def _valid_allow_list(cls, value: list[str]) -> list[str]:
        OutboundPolicy.from_allow_list(value)  # ValueError naming the entry that is no network nor name
        return value


class CheckpointConfig(_Model):
    """Where runs are checkpointed (so that ``--resume RUN_ID`` can continue them)."""

    backend: Literal["sqlite", "memory", "none"] = "sqlite"
    #: The SQLite file (default: ``$A2A_SUPERVISOR_DB`` or ``~/.local/state/a2a-net/supervisor.sqlite``).
    path: str | None = None
    #: Seconds a change of a delegation (started, its task id known, ended) may wait for its
    #: checkpoint, so that one step saves every change of that interval; 0: one step per change.
    interval: float = Field(0.05, ge=0.0, le=60.0)

    def resolved_path(self) -> Path:
        if self.path:
            return Path(expand_env(self.path)).expanduser()
        env = os.environ.get("A2A_SUPERVISOR_DB")
        if env:
            return Path(env).expanduser()
        state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(state) / "a2a-net" / "supervisor.sqlite"


class SupervisorSettings(_Model):
    mode: Mode = "plan_upfront"
    #: A name from ``supervisor.strategy.STRATEGIES``: sequential, parallel or adaptive.
    strategy: str = DEFAULT_STRATEGY
    model: ModelConfig | None = None
    #: Ignore any model (configured or from the environment) and use the offline planner.
    offline: bool = False
    #: Delegations in flight at once (a sliding pool).
    max_concurrency: int = Field(4, ge=1, le=1000)
    #: The largest hop count a delegation may carry (``a2a-net/depth``); deeper ones are refused.
    max_depth: int = Field(3, ge=1)
    #: Steps per run: every delegation started and every model call counts one.
    max_steps: int = Field(200, ge=1)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    #: How results are checked: ``model`` asks the model, ``rules`` uses the fixed rules, ``auto`` = model if any.
    reflection: Literal["auto", "model", "rules"] = "auto"
    #: How many times reflection may send the plan back to the planner.
    max_replans: int = Field(2, ge=0)
    #: With more agents than this, the model is shown only the best-ranked ones for the objective.
    catalog_size: int = Field(8, ge=1)
    #: Longest peer text (a result, a card description) quoted into a prompt, in characters.
    peer_text_chars: int = Field(4000, ge=100)
    #: The most bytes of files (produced by the items a delegation depends on) sent inline as parts
    #: of its message; a file past it is left out and named in the text (``supervisor.workspace``).
    attachments_bytes: int = Field(1024 * 1024, ge=0)
    file_urls: FileUrlsConfig = Field(default_factory=FileUrlsConfig)
    #: Characters of one agent card in the model's prompt: a structural summary (name,
    #: description, skills with ids, descriptions and examples) shrunk to fit, never cut mid-JSON.
    card_chars: int = Field(2000, ge=200)
    #: Tokens of the earlier turns of a conversation shown to the model (a digest past that).
    history_tokens: int = Field(2000, ge=100)
    #: Tokens of every prompt sent to the model, in every mode: messages, tool calls' arguments and
    #: tool results (``supervisor.compaction``; the state keeps every message whole).
    messages_tokens: int = Field(8000, ge=200)
    #: Who summarises the oldest turns of a conversational run once they no longer fit
    #: ``messages_tokens``: ``model``, ``rules`` (one line per call and result), ``auto`` = model if any.
    summaries: Literal["auto", "model", "rules"] = "auto"
    #: Hooks around delegations and model calls, as import paths (``supervisor.hooks``).
    hooks: list[str] = Field(default_factory=list)
    #: Relay INPUT_REQUIRED questions to the user (``None``: the CLI decides: a terminal = yes).
    interactive: bool | None = None
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        return strategy_named(value).name


class SupervisorConfig(_Model):
    supervisor: SupervisorSettings = Field(default_factory=SupervisorSettings)
    agents: list[AgentConfig] = Field(default_factory=list)
    a2a: A2ADefaults = Field(default_factory=A2ADefaults)

    @field_validator("agents")
    @classmethod
    def _unique_names(cls, agents: list[AgentConfig]) -> list[AgentConfig]:
        seen: set[str] = set()
        for agent in agents:
            if agent.name in seen:
                raise ValueError(f"two agents are named {agent.name!r}; names must be unique")
            seen.add(agent.name)
        return agents

    def agent_timeout(self, agent: AgentConfig) -> float:
        return agent.timeout or self.a2a.timeout

    def agent_retry(self, agent: AgentConfig) -> RetryConfig:
        return agent.retry.apply(self.a2a.retry) if agent.retry else self.a2a.retry


# ---- YAML with line numbers ---------------------------------------------------------------


@dataclass(frozen=True)
class ConfigIssue:
    #: Where, as a dotted path (``agents[1].auth.token``).
    path: str
    #: 1-based line of the file (``None`` when the config did not come from a file).
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.path or '(top level)'}: {self.message}"


class ConfigError(ValueError):
    """The configuration is invalid; ``issues`` lists every problem with its field and line."""

    def __init__(self, source: str, issues: Sequence[ConfigIssue]) -> None:
        self.source = source
        self.issues = list(issues)
        lines = [
            f"{source}:{i.line}: {i.path or '(top level)'}: {i.message}" if i.line else f"{source}: {i}"
            for i in self.issues
        ]
        super().__init__(
            f"invalid supervisor configuration ({len(self.issues)} problem"
            f"{'s' if len(self.issues) != 1 else ''}):\n  " + "\n  ".join(lines)
        )


def _dotted(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _node_line(root: yaml.Node | None, loc: Sequence[int | str]) -> int | None:
    """The line of the YAML node at ``loc`` (or of the deepest existing node on the way there)."""
    node = root
    if node is None:
        return None
    line: int = int(node.start_mark.line) + 1
    for part in loc:
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    # An unknown key is reported at the key itself; anything else at its value.
                    child = value
                    line = int(key.start_mark.line) + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            child = node.value[part]
        if child is None:
            return line
        node = child
        line = int(node.start_mark.line) + 1
    return line


def _clean_loc(loc: Sequence[int | str]) -> list[int | str]:
    # pydantic adds the union member tried ("str", "list[str]") and validator names to locations.
    return [p for p in loc if not (isinstance(p, str) and (p.startswith(("function-", "list[")) or p == "str"))]


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation holds (``Model``, ``Model | None``, ``list[Model]``, ``dict[str, Model]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def _options_at(title: str, loc: Sequence[int | str]) -> list[str]:
    """The option names the model at ``loc`` (below the model named ``title``) knows: what an
    unknown option there was most likely meant to be."""
    models: list[type[BaseModel]] = [m for m in _all_models() if m.__name__ == title]
    for part in loc:
        fields = [m.model_fields[part] for m in models if isinstance(part, str) and part in m.model_fields]
        if fields:  # else a list index or a mapping's key: the same models hold the options below
            models = [model for field in fields for model in _models_in(field.annotation)]
    return [name for model in models for name in model.model_fields]


def _all_models() -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    pending: list[type[BaseModel]] = [_Model]
    while pending:
        model = pending.pop()
        found.append(model)
        pending.extend(model.__subclasses__())
    return found


def _issues(exc: ValidationError, root: yaml.Node | None) -> list[ConfigIssue]:
    issues = []
    for error in exc.errors(include_url=False):
        loc = _clean_loc(error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            best = difflib.get_close_matches(str(loc[-1]), _options_at(exc.title, loc[:-1]), n=1, cutoff=0.6)
            hint = f"did you mean {best[0]!r}?" if best else "check the spelling; see supervisor/README.md"
            message = f"unknown option {loc[-1]!r} ({hint})"
        issues.append(ConfigIssue(_dotted(loc), _node_line(root, loc), message))
    return sorted(issues, key=lambda i: i.line or 0)


def parse_config(text: str, source: str = "<config>") -> SupervisorConfig:
    """Validate YAML text; ``ConfigError`` names each bad field and its line."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text) if root is not None else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, [ConfigIssue("", line, f"not valid YAML: {problem}")]) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, [ConfigIssue("", 1, "the file must be a mapping with supervisor/agents/a2a")])
    try:
        return SupervisorConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(source, _issues(exc, root)) from None


def load_config(path: str | os.PathLike[str]) -> SupervisorConfig:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(file), [ConfigIssue("", None, f"cannot read the file: {exc.strerror or exc}")]) from exc
    return parse_config(text, str(file))


def validation_issues(exc: ValidationError) -> list[ConfigIssue]:
    """The issues of a ``ValidationError`` from the Python API (no lines to report)."""
    return _issues(exc, None)
