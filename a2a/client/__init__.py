"""The client side: ``A2AClient``, credentials and the retry policy."""

from .auth import ApiKey, BearerToken, CredentialProvider, credentials_from_env
from .card import choose_interface, fetch_card
from .client import A2AClient, user_message
from .retry import RetryBudget, RetryPolicy

__all__ = [
    "A2AClient",
    "ApiKey",
    "BearerToken",
    "CredentialProvider",
    "RetryBudget",
    "RetryPolicy",
    "choose_interface",
    "credentials_from_env",
    "fetch_card",
    "user_message",
]
