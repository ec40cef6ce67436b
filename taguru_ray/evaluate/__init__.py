"""``taguru-ray evaluate``: the retrieval and citation quality gate (seed 003, EVALUATE.md §3).

One run asks a populated context a labelled question set (eval.jsonl) over
Taguru's read-only HTTP API, scores every case from rank and label alone, and
writes ``evaluation.json``; a ``--thresholds`` file turns that report into a
pass/fail gate (exit 3), and ``evaluate compare`` says which cases moved
between two runs. The package reads no model: it imports nothing of extract,
the LLM client or embeddings, so no answer-generating model can be involved.
"""
