"""An echo agent on python-a2a's server (Flask), for our client and CLI to talk to.

    python echo_server.py --port N

python-a2a's server needs its URL up front (for its card), so the port is chosen by the
caller. Prints "READY http://127.0.0.1:N" just before serving (python-a2a prints its own
banner too); the default ``A2AServer`` answers a text message with the same text.
"""

from __future__ import annotations

import argparse

from python_a2a import A2AServer, run_server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    url = f"http://127.0.0.1:{args.port}"
    agent = A2AServer(name="python-a2a-echo", description="Echo agent on python-a2a (interop tests)", url=url)
    print(f"READY {url}", flush=True)
    run_server(agent, host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
