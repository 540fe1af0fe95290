"""Fakes of outside services for tests: each one runs on loopback and records what it was sent."""

from .openai_server import Failure, FakeOpenAI, Recorded, Reply, Step, ToolCall, ToolCalls, call

__all__ = ["Failure", "FakeOpenAI", "Recorded", "Reply", "Step", "ToolCall", "ToolCalls", "call"]
