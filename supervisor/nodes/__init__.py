"""The nodes of the supervisor's graph, one module each (``supervisor.graph`` wires them).

Every node takes the state and the run's context (``runtime.context_of``) and returns only the
state keys it changed; every ``after_*`` function chooses the next node. Both run modes share
``discover``, ``delegate``, ``reflect`` and ``synthesize``; ``plan`` belongs to ``plan_upfront``,
``converse`` and ``act`` to ``conversational``. ``todo`` and ``prompting`` hold what several
nodes share: the TODO list, the agent catalog and the reading of the model's tool calls.
"""
