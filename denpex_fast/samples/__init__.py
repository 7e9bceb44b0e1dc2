"""Bundled sample logs.

``sample_job/`` is a real failed job from the project's labelled corpus
(``tests/corpus/cases/019-mn-shape-mismatch-forward``): two torchrun agents
("nodes") with 2 gloo workers each, node1's clock shifted by 3.5 s; global
rank 3 on node1 hits a real shape mismatch in its forward pass, the other
ranks fail in the next collective, and torchrun's own "Root Cause" summary
names rank 0.  ``denpex demo`` diagnoses it.
"""
