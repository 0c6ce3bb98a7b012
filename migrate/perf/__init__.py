"""`migrate perf`: why a ported run is slow, from the profiles it recorded.

Data flow (one folder per stage):

    PATH... --read/discover--> Sources (an Ascend PyTorch Profiler result, a Kineto trace,
        a .db export, msprof-analyze cluster output), ranks numbered
      --read/<kind>--> Timeline per rank (timeline.py: steps, device ops in columns, host ops,
        overlap tracks, communication, tables the profile holds, notes on what is missing)
      --analyze/rank--> RankResult (step breakdown, top operators, findings by detectors/*)
      --analyze/cluster, mfu, compare, gate--> Report (model.py)
      --render/<format>--> text | json | markdown | html

Readers never keep a whole trace in memory: JSON is streamed (read/jsonstream.py), device
ops are kept in typed columns, each rank is read and analysed in its own worker process
(``--jobs``) that hands back only its RankResult. The finding catalog
(data/findings.yaml: id, title, fix, the MIG9 rule that makes the change) is shared with the
emulated run's performance section, so a finding has one ID and one fix before and after
the hardware arrives.
"""
