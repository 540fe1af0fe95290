"""python-a2a's client against an A2A server, one scenario per run.

    python client.py --url URL --scenario send|get

Prints one JSON line per step: {"step", "data"} with what python-a2a returned (its own
``to_dict()``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from python_a2a import A2AClient, Message, MessageRole, TextContent


def emit(step: str, data: Any) -> None:
    print(json.dumps({"step": step, "data": data}, default=str), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--scenario", required=True)
    args = parser.parse_args()
    client = A2AClient(args.url, timeout=10)
    if args.scenario == "send":
        reply = client.send_message(Message(content=TextContent(text="hello python-a2a"), role=MessageRole.USER))
        emit("reply", reply.to_dict())
    elif args.scenario == "get":
        # python-a2a does not raise here: it returns a task FAILED on its side.
        emit("got", client.get_task("no-such-task").to_dict())
    else:
        raise SystemExit(f"unknown scenario {args.scenario}")


if __name__ == "__main__":
    main()
