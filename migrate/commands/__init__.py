"""One module per CLI command family; each exposes register(app)."""
