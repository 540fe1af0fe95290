"""Runs tests/interop/sdk_echo_server.py (the reference a2a-sdk echo agent) for benchmarking.

Runs ONLY under the SDK venv (tests/interop/sdk_env.sdk_python()). It serves exactly the app
that file builds, through its own ``serve()``; the one difference is the log level: WARNING
instead of INFO, so that uvicorn does not write an access-log line per request (our server
runs without an access log too). The SDK venv has neither uvloop nor httptools, so uvicorn
runs on the stock asyncio loop with h11: that is the reference SDK as its pins install it.

Usage: <sdk venv>/bin/python benchmarks/sdk_launcher.py --port P
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "interop"))

import sdk_echo_server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    signal.signal(signal.SIGTERM, sdk_echo_server._exit_cleanly)
    asyncio.run(sdk_echo_server.serve(args.port))


if __name__ == "__main__":
    main()
