"""The HTTPS server: the ASGI app, uvicorn over TLS, the decision log, metrics and certificates."""
