"""The chunk sizes the plan cuts by: `--chunk-bytes`'s default and floor (seed 000)."""

DEFAULT_CHUNK_BYTES = 24576  # segment bytes per model call
MIN_CHUNK_BYTES = 512  # the least a chunk, or a split piece, is cut to
