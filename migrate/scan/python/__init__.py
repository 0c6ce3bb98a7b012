"""Python sources (and notebook cells): parse, resolve imports, run the rule kinds."""
