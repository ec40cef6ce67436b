"""An embedded Taguru context: source files imported into a local store, searched and
served in Taguru's wire format (EVALUATE.md), so retrieval runs with no server to
install. `api` is the interface; the store, the import and the search semantics
live beside it.
"""
