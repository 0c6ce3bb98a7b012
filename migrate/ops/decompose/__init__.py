"""ONNX decompositions: rewrite ops Ascend cannot run into subgraphs of ops it can.

One module per op family registers its rules with :func:`registry.decomposition`; each rule
declares the ops it emits so tests can prove a rewrite stays inside the supported set.
"""
