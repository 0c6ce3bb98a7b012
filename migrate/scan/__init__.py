"""`migrate scan`: paths -> findings. discover (which files) -> config -> engine (cache,
workers) -> python/ or text/ matchers, each reading the lookup tables in tables/."""
