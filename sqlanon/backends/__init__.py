"""Database backends: each implements :class:`sqlanon.backends.base.Session`."""
