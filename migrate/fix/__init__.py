"""`migrate apply`: findings -> edits -> verified, atomically written files. run (which files)
-> rewrite (fix passes to a fixpoint) -> applier (choose, splice, imports) -> verify -> write;
fixers/ holds rule logic that needs Python."""
