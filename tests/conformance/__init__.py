"""The A2A 1.0 conformance suite: every operation and rule, over every HTTP binding."""
