"""Credentials: the server's schemes (where secrets come from, how they are checked) and the
client's providers (which never show a secret)."""

from __future__ import annotations

import hmac
from pathlib import Path

import pytest

from a2a import A2AServer, Agent
from a2a.client import ApiKey, BearerToken, credentials_from_env
from a2a.errors import AuthenticationRequiredError
from a2a.server.engine.auth import ApiKeyAuth, Authenticator, BearerAuth, load_credentials
from a2a.types import AgentCapabilities, AgentCard, APIKeySecurityScheme, SecurityScheme


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("A2A_BEARER_TOKENS", "A2A_API_KEYS", "A2A_TOKEN", "A2A_API_KEY"):
        monkeypatch.delenv(name, raising=False)


# ---- where credentials come from ------------------------------------------------------------------


def test_bearer_from_a_credentials_dict() -> None:
    auth = BearerAuth(credentials={"tok-alice": "alice", "tok-bob": "bob"})
    assert auth.configured
    assert auth.principal_for("tok-alice") == "alice"
    assert auth.principal_for("tok-bob") == "bob"
    assert auth.principal_for("tok-carol") is None
    assert auth.principal_for("") is None


def test_bearer_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_BEARER_TOKENS", " alice:tok-a , bob:tok:with:colons ,")
    auth = BearerAuth()
    assert auth.principal_for("tok-a") == "alice"
    assert auth.principal_for("tok:with:colons") == "bob"  # the secret is everything after the first colon
    assert auth.principal_for(" tok-a") is None


def test_api_key_from_its_own_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_API_KEYS", "svc:key-1")
    monkeypatch.setenv("A2A_BEARER_TOKENS", "alice:tok-a")
    assert ApiKeyAuth().principal_for("key-1") == "svc"
    assert ApiKeyAuth().principal_for("tok-a") is None
    assert BearerAuth().principal_for("key-1") is None


def test_custom_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_TOKENS", "ops:t0k")
    assert BearerAuth(env="MY_TOKENS").principal_for("t0k") == "ops"


def test_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# who:secret\nalice:tok-a\n\n  bob:tok-b  \n# carol:tok-c\n", encoding="utf-8")
    auth = BearerAuth(file=str(path))
    assert auth.principal_for("tok-a") == "alice"
    assert auth.principal_for("tok-b") == "bob"
    assert auth.principal_for("tok-c") is None


def test_file_and_environment_are_merged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "keys"
    path.write_text("file-user:k1\n", encoding="utf-8")
    monkeypatch.setenv("A2A_API_KEYS", "env-user:k2")
    found = load_credentials(env="A2A_API_KEYS", file=path)
    assert found == {"k1": "file-user", "k2": "env-user"}
    auth = ApiKeyAuth(file=str(path))
    assert auth.principal_for("k1") == "file-user" and auth.principal_for("k2") == "env-user"


@pytest.mark.parametrize(
    "entry",
    ["alice", "alice:", ":secret", "  :  ", "alice:   ", "good:one,broken"],
)
def test_malformed_environment_entries_are_a_clear_value_error(entry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_BEARER_TOKENS", entry)
    with pytest.raises(ValueError, match=r"\$A2A_BEARER_TOKENS.*'principal:secret'"):
        BearerAuth()


def test_malformed_file_entry_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.txt"
    path.write_text("alice:tok-a\njust-a-secret\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokens\.txt.*'principal:secret'"):
        BearerAuth(file=str(path))


def test_malformed_entry_does_not_echo_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_API_KEYS", "s3cr3t-value-without-principal")
    with pytest.raises(ValueError) as info:
        ApiKeyAuth()
    assert "s3cr3t" not in str(info.value)


def test_missing_file_is_a_clear_value_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ValueError, match=r"cannot read credentials file .*nope"):
        BearerAuth(file=str(missing))


# ---- a scheme without credentials refuses to start ------------------------------------------------


@pytest.mark.parametrize(("scheme", "hint"), [(BearerAuth, r"\$A2A_BEARER_TOKENS"), (ApiKeyAuth, r"\$A2A_API_KEYS")])
def test_scheme_without_credentials_refuses_to_start(scheme: type[BearerAuth | ApiKeyAuth], hint: str) -> None:
    unconfigured = scheme()
    assert not unconfigured.configured
    with pytest.raises(ValueError, match=rf"no credentials: set {hint}"):
        Authenticator([unconfigured])


def test_server_refuses_a_scheme_without_credentials(tmp_path: Path) -> None:
    agent = Agent("Locked", "needs credentials")
    with pytest.raises(ValueError, match="has no credentials"):
        A2AServer(agent, auth=[BearerAuth()])
    empty = tmp_path / "empty"
    empty.write_text("# nobody yet\n", encoding="utf-8")
    with pytest.raises(ValueError, match=str(empty)):
        A2AServer(agent, auth=[ApiKeyAuth(file=str(empty), env=None)])


def test_no_schemes_means_open() -> None:
    auth = Authenticator([])
    assert not auth.enabled
    assert auth.authenticate({}) is None
    assert auth.card_fields() == (None, None)


# ---- checking a presented credential -------------------------------------------------------------


def test_principal_for_compares_every_digest_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {f"token-{i}": f"user-{i}" for i in range(8)}
    auth = BearerAuth(credentials=secrets)
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    for presented, expected in [("token-0", "user-0"), ("token-7", "user-7"), ("token-3", "user-3"), ("x", None)]:
        calls.clear()
        assert auth.principal_for(presented) == expected
        # No early exit: every known digest is compared, whichever one matches (or none).
        assert len(calls) == len(secrets)
        # Digests of equal length are compared, never the raw secrets.
        assert all(len(a) == len(b) == 32 for a, b in calls)
        assert all(presented.encode() not in (a, b) for a, b in calls)


def test_authenticator_tries_each_scheme() -> None:
    auth = Authenticator([BearerAuth(credentials={"tok": "alice"}), ApiKeyAuth(credentials={"key": "svc"})])
    assert auth.authenticate({"Authorization": "Bearer tok"}) == "alice"
    assert auth.authenticate({"Authorization": "bearer   tok  "}) == "alice"
    assert auth.authenticate({"X-API-Key": "key"}) == "svc"
    assert auth.authenticate({"Authorization": "Bearer wrong", "X-API-Key": "key"}) == "svc"
    for headers in (
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic tok"},
        {"Authorization": "tok"},
        {"X-API-Key": ""},
        {"Authorization": "Bearer key"},
    ):
        with pytest.raises(AuthenticationRequiredError):
            auth.authenticate(headers)
    assert auth.challenges() == ['Bearer realm="a2a"', 'ApiKey realm="a2a", header="X-API-Key"']


def test_api_key_header_is_configurable() -> None:
    auth = Authenticator([ApiKeyAuth(credentials={"k": "svc"}, header="X-Agent-Key")])
    assert auth.authenticate({"X-Agent-Key": "k"}) == "svc"
    with pytest.raises(AuthenticationRequiredError):
        auth.authenticate({"X-API-Key": "k"})


def test_card_declares_the_schemes() -> None:
    auth = Authenticator([BearerAuth(credentials={"t": "a"}), ApiKeyAuth(credentials={"k": "b"})])
    schemes, requirements = auth.card_fields()
    assert schemes is not None and requirements is not None
    assert schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
    assert schemes["apiKey"].api_key_security_scheme == APIKeySecurityScheme(location="header", name="X-API-Key")
    # Alternatives: one requirement per scheme, not one requirement naming both.
    assert [set(r.schemes) for r in requirements] == [{"bearer"}, {"apiKey"}]


# ---- secrets never show ---------------------------------------------------------------------------


def test_client_bearer_token_repr_hides_the_secret() -> None:
    token = BearerToken("s3cr3t-token-value")
    assert "s3cr3t" not in repr(token) and "s3cr3t" not in str(token) and "s3cr3t" not in f"{token!r}"
    assert token.headers(None) == {"Authorization": "Bearer s3cr3t-token-value"}


def test_client_api_key_repr_hides_the_secret() -> None:
    key = ApiKey("s3cr3t-key-value", header="X-Custom")
    assert "s3cr3t" not in repr(key) and "s3cr3t" not in str(key)
    assert "X-Custom" in repr(key)
    assert key.headers(None) == {"X-Custom": "s3cr3t-key-value"}


def test_client_api_key_uses_the_header_the_card_names() -> None:
    card = AgentCard(
        name="a",
        description="d",
        version="1",
        supported_interfaces=[],
        capabilities=AgentCapabilities(),
        default_input_modes=[],
        default_output_modes=[],
        skills=[],
        security_schemes={
            "k": SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Agent-Key"))
        },
    )
    assert ApiKey("v").headers(card) == {"X-Agent-Key": "v"}
    assert ApiKey("v").headers(None) == {"X-API-Key": "v"}


def test_credentials_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert credentials_from_env() is None
    monkeypatch.setenv("A2A_API_KEY", "env-key")
    assert credentials_from_env() == ApiKey("env-key")
    monkeypatch.setenv("A2A_TOKEN", "env-token")
    assert credentials_from_env() == BearerToken("env-token")
    assert credentials_from_env(token="explicit") == BearerToken("explicit")


@pytest.mark.parametrize("scheme", [BearerAuth, ApiKeyAuth])
def test_server_scheme_repr_hides_the_secrets(scheme: type[BearerAuth | ApiKeyAuth]) -> None:
    # A scheme object ends up in logs and tracebacks (e.g. a config dump); its secrets must not.
    auth = scheme(credentials={"s3cr3t-value": "alice"})
    assert "s3cr3t" not in repr(auth)
    assert "s3cr3t" not in repr(Authenticator([auth]).schemes)
