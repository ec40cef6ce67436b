"""Coding-agent sessions as Taguru facts (seed 004): import without a model, search and
show from a full-text index, and "code locates, model judges" extraction.

`events` holds the unified records every converter writes; `convert/` one converter
per agent format; `index` the store and its full-text index.
"""
