from taguru_ray.pipeline.plan import label_blocks, plan_chunks
from taguru_ray.text.paragraphs import split_paragraphs


def test_short_segment_is_one_chunk_with_global_labels() -> None:
    chunks = plan_chunks(split_paragraphs("# T\n\nfirst\n\nsecond"), 24576)
    assert len(chunks) == 1
    assert chunks[0].text == "[0] # T\n\n[1] first\n\n[2] second"
    assert (chunks[0].paragraph_first, chunks[0].paragraph_last, chunks[0].total) == (0, 2, 1)


def test_chunks_pack_greedily_and_never_exceed_the_cap() -> None:
    text = "\n\n".join(f"paragraph number {i} " + "x" * 200 for i in range(30))
    chunks = plan_chunks(split_paragraphs(text), 1024)
    assert len(chunks) > 5
    assert all(chunk.bytes <= 1024 for chunk in chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    # Labels continue across chunks: numbering is the segment's, not the chunk's.
    assert chunks[1].text.startswith(f"[{chunks[0].paragraph_last + 1}] ")
    assert all(c.total == len(chunks) for c in chunks)


def test_oversized_paragraph_repeats_its_label_and_cuts_at_a_line_break() -> None:
    lines = "\n".join(f"line {i} " + "y" * 90 for i in range(20))
    blocks = label_blocks(split_paragraphs("intro\n\n" + lines), 512)
    tails = [b for b in blocks if b.paragraph == 1]
    assert len(tails) > 2
    assert all(b.text.startswith("[1] line ") for b in tails)
    assert all(b.bytes <= 512 for b in blocks)
    assert all(not b.text.endswith("\n") for b in blocks)


def test_oversized_line_cuts_at_a_character_boundary() -> None:
    blocks = label_blocks(split_paragraphs("日" * 400), 512)
    assert len(blocks) == 3
    assert all(b.bytes <= 512 for b in blocks)
    assert "".join(b.text.removeprefix("[0] ") for b in blocks) == "日" * 400


def test_chunk_sha256_hashes_the_labelled_text() -> None:
    import hashlib

    chunk = plan_chunks(split_paragraphs("a"), 512)[0]
    assert chunk.sha256 == hashlib.sha256(b"[0] a").hexdigest()
