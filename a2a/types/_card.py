"""The agent card and everything it contains (capability discovery)."""

from __future__ import annotations

import builtins
from typing import Any

from ._base import UNSET, UnsetType, Wire, check_oneof

__all__ = [
    "APIKeySecurityScheme",
    "AgentCapabilities",
    "AgentCard",
    "AgentCardSignature",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "AuthorizationCodeOAuthFlow",
    "ClientCredentialsOAuthFlow",
    "DeviceCodeOAuthFlow",
    "HTTPAuthSecurityScheme",
    "ImplicitOAuthFlow",
    "MutualTlsSecurityScheme",
    "OAuth2SecurityScheme",
    "OAuthFlows",
    "OpenIdConnectSecurityScheme",
    "PasswordOAuthFlow",
    "SecurityRequirement",
    "SecurityScheme",
    "StringList",
]


class AgentInterface(Wire):
    url: str
    protocol_binding: str
    protocol_version: str = "1.0"
    tenant: str | None = None


class AgentProvider(Wire):
    url: str
    organization: str


class AgentExtension(Wire):
    uri: str
    description: str | None = None
    required: bool = False
    params: dict[str, Any] | None = None


class AgentCapabilities(Wire):
    streaming: bool | None = None
    push_notifications: bool | None = None
    extensions: list[AgentExtension] | None = None
    extended_agent_card: bool | None = None


class StringList(Wire):
    # The proto names this field "list", which shadows the builtin inside the class body.
    list: builtins.list[str] = []


class SecurityRequirement(Wire):
    schemes: dict[str, StringList] = {}


class AgentSkill(Wire):
    id: str
    name: str
    description: str
    tags: list[str]
    examples: list[str] | None = None
    input_modes: list[str] | None = None
    output_modes: list[str] | None = None
    security_requirements: list[SecurityRequirement] | None = None


class AgentCardSignature(Wire):
    protected: str
    signature: str
    header: dict[str, Any] | None = None


class APIKeySecurityScheme(Wire):
    location: str
    name: str
    description: str | None = None


class HTTPAuthSecurityScheme(Wire):
    scheme: str
    bearer_format: str | None = None
    description: str | None = None


class AuthorizationCodeOAuthFlow(Wire):
    authorization_url: str
    token_url: str
    scopes: dict[str, str]
    refresh_url: str | None = None
    pkce_required: bool = False


class ClientCredentialsOAuthFlow(Wire):
    token_url: str
    scopes: dict[str, str]
    refresh_url: str | None = None


class ImplicitOAuthFlow(Wire):
    authorization_url: str | None = None
    refresh_url: str | None = None
    scopes: dict[str, str] | None = None


class PasswordOAuthFlow(Wire):
    token_url: str | None = None
    refresh_url: str | None = None
    scopes: dict[str, str] | None = None


class DeviceCodeOAuthFlow(Wire):
    device_authorization_url: str
    token_url: str
    scopes: dict[str, str]
    refresh_url: str | None = None


class OAuthFlows(Wire):
    authorization_code: AuthorizationCodeOAuthFlow | UnsetType = UNSET
    client_credentials: ClientCredentialsOAuthFlow | UnsetType = UNSET
    implicit: ImplicitOAuthFlow | UnsetType = UNSET
    password: PasswordOAuthFlow | UnsetType = UNSET
    device_code: DeviceCodeOAuthFlow | UnsetType = UNSET

    def __post_init__(self) -> None:
        check_oneof(
            self,
            "OAuthFlows",
            ("authorization_code", "client_credentials", "implicit", "password", "device_code"),
        )


class OAuth2SecurityScheme(Wire):
    flows: OAuthFlows
    oauth2_metadata_url: str | None = None
    description: str | None = None


class OpenIdConnectSecurityScheme(Wire):
    open_id_connect_url: str
    description: str | None = None


class MutualTlsSecurityScheme(Wire):
    description: str | None = None


class SecurityScheme(Wire):
    """Exactly one of the five scheme kinds (OpenAPI 3.2 style)."""

    api_key_security_scheme: APIKeySecurityScheme | UnsetType = UNSET
    http_auth_security_scheme: HTTPAuthSecurityScheme | UnsetType = UNSET
    oauth2_security_scheme: OAuth2SecurityScheme | UnsetType = UNSET
    open_id_connect_security_scheme: OpenIdConnectSecurityScheme | UnsetType = UNSET
    mtls_security_scheme: MutualTlsSecurityScheme | UnsetType = UNSET

    def __post_init__(self) -> None:
        check_oneof(
            self,
            "SecurityScheme",
            (
                "api_key_security_scheme",
                "http_auth_security_scheme",
                "oauth2_security_scheme",
                "open_id_connect_security_scheme",
                "mtls_security_scheme",
            ),
        )


class AgentCard(Wire):
    name: str
    description: str
    version: str
    supported_interfaces: list[AgentInterface]
    capabilities: AgentCapabilities
    default_input_modes: list[str]
    default_output_modes: list[str]
    skills: list[AgentSkill]
    provider: AgentProvider | None = None
    documentation_url: str | None = None
    icon_url: str | None = None
    security_schemes: dict[str, SecurityScheme] | None = None
    security_requirements: list[SecurityRequirement] | None = None
    signatures: list[AgentCardSignature] | None = None
