"""Durable task stores, and ``open_store(url)`` which picks one from a URL."""
