"""Third-party A2A implementations ("peers") for the interop matrix, each in its own environment.

One module per peer builds its environment once (a venv or a node project under ``.cache/peers``,
rebuilt only when its pinned versions change) and starts it as a subprocess on 127.0.0.1.
Nothing here imports a peer: they only ever run as separate processes.
"""
