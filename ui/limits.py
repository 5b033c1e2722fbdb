"""The defaults of the inspector's connection bounds (ui/connections.py), apart so that the
settings can name them without loading the web server."""

# A browser opens about six connections per page, and the live page keeps one more.
MAX_CONNECTIONS = 64
REQUEST_TIMEOUT_S = 10.0
