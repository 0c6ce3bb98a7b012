"""The scan engine: files -> findings. (Being written by the lead; API is fixed.)

    scan_text(text, rel, file_kind, rules) -> list[Finding]
        Findings (with fixes) for one file's decoded text. file_kind is "python",
        or a kind from migrate.source.textfiles.file_kind().
    scan_paths(paths, options: ScanOptions) -> ScanResult
        Discovery, prefilter, parallel parse, cache; never raises on bad files.
"""
