"""`taguru-ray benchmark extract | compare` (seed 003, BENCHMARK.md §1–2).

`extract` runs one `taguru-ray extract` per (model, run) cell and keeps a
results directory; `compare` is a pure, network-free function of that
directory that measures and never ranks.
"""
