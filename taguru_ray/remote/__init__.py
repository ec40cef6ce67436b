"""The client of a Taguru server: where it is, and its HTTP surface as calls.

`import --url`, `evaluate` and `benchmark search` talk to any Taguru server (the
embedded `taguru-ray serve` or a real one) through this one client, so the
address rules, the bearer, the envelope and the error wording are the same for
all three (EVALUATE.md §1.0).
"""
