"""What completions cost: the bundled price table, a --prices file, a GPU-hour price."""
