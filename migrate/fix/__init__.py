"""`migrate apply`: findings -> edits -> verified, atomically written files. run (which files)
-> rewrite (fix passes to a fixpoint) -> applier (choose, splice, imports) -> verify -> write.
The fixes themselves are built by the scan, where the findings are (migrate/scan/)."""
