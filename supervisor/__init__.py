"""The LangGraph supervisor that plans work and delegates it to A2A agents."""
