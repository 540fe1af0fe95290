"""Operations: what an operator watches a server with. Health and readiness, Prometheus metrics,
the access log and JSON log lines."""
