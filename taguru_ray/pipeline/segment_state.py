"""What one segment's extraction program knows and has found so far.

The program (`segment_program`, `descent`) reads and updates it as it goes;
nothing in it is I/O: the checkpoint's units arrive through `LoadResume`, and
what is written leaves through effects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from taguru_ray.contract.names import join, output_name
from taguru_ray.contract.settings import Settings
from taguru_ray.pipeline.annotate import ContextBlock, haystack_text
from taguru_ray.pipeline.effects import LogMove, Program, Say
from taguru_ray.pipeline.ladder import LadderConfig
from taguru_ray.pipeline.mechanical import Offered
from taguru_ray.pipeline.overview import Overview
from taguru_ray.pipeline.plan import Chunk, Piece
from taguru_ray.pipeline.prompt import Conversation, user_turn
from taguru_ray.pipeline.read import Segment
from taguru_ray.pipeline.replay_book import ReplayBook
from taguru_ray.pipeline.report import FAILURE_PREFIX, chunk_prefix
from taguru_ray.pipeline.rounds import LoopPolicy, PieceSpec
from taguru_ray.pipeline.run_inputs import RunInputs
from taguru_ray.pipeline.segment_job import Resume, SegmentJob
from taguru_ray.pipeline.steer import Steering
from taguru_ray.pipeline.structure import Unit
from taguru_ray.pipeline.validate import Rules
from taguru_ray.text.occurrence import Haystack
from taguru_ray.text.redact import Redaction

R = TypeVar("R")


@dataclass(frozen=True)
class ReplayView:
    """Under --replay / --resume-from: the segment's recording and how it is replayed."""

    book: ReplayBook
    mode: str  # auto | strict
    replay_from: str  # the trace folder the recording is read from


@dataclass(frozen=True)
class SegmentTask:
    """What the program is handed: the segment, the run's settings and inputs."""

    job: SegmentJob
    settings: Settings
    run_id: str
    inputs: RunInputs = field(default_factory=RunInputs)
    replay: ReplayView | None = None


@dataclass
class SegmentState:
    """The running state of one segment's extraction."""

    task: SegmentTask
    segment: Segment
    chunks: list[Chunk]
    system: str
    resume: Resume
    units: list[Unit] = field(default_factory=list)  # --chunk-context: the headings' units
    blocks: dict[int, ContextBlock] = field(default_factory=dict)  # chunk -> its block
    overviews: list[Overview | None] = field(default_factory=list)  # chunk -> its overview
    offered: Offered = field(default_factory=Offered)
    redactions: list[Redaction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pinned_from: str | None = None
    steering: Steering = field(default_factory=Steering)
    chunk_systems: dict[int, str] = field(default_factory=dict)  # carryover: per-chunk prompts
    carry: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    logged_systems: set[str] = field(default_factory=set)
    gleaning_passes: int = 0
    failed_gleanings: int = 0
    failures: dict[int, tuple[Piece, str]] = field(default_factory=dict)  # chunk -> innermost
    interrupted: bool = False  # the run is stopping: no new completion may start

    @property
    def job(self) -> SegmentJob:
        return self.task.job

    @property
    def settings(self) -> Settings:
        return self.task.settings

    @property
    def run_id(self) -> str:
        return self.task.run_id

    @property
    def inputs(self) -> RunInputs:
        return self.task.inputs

    @property
    def batch_path(self) -> str:
        return join(self.settings.source.out, output_name(self.job.source))

    @property
    def ladder(self) -> LadderConfig:
        s = self.settings.ladder
        return LadderConfig.of(
            s.structured_output, s.max_output_tokens, s.escalation_factor, s.runaway_ratio
        )

    def policy(self) -> LoopPolicy:
        s = self.settings.ladder
        return LoopPolicy(
            s.max_attempts,
            s.corrective_context_bytes,
            self.settings.prompt.fact_budget,
            self.run_id,
            s.lossy,
            self.ladder,
        )

    def spec(self, piece: Piece) -> PieceSpec:
        return PieceSpec(
            piece=piece,
            source=self.job.source,
            conversation=Conversation(self.system_of(piece), self.user(piece)),
            rules=Rules(len(self.segment.paragraphs), self.settings.prompt.questions),
            haystack=Haystack(haystack_text(self.block_text(piece), piece.text)),
            offered=self.offered,
        )

    def system_of(self, piece: Piece) -> str:
        """This run's system prompt for the piece's chunk, or under replay the one the
        recording sent this piece (or its chunk's unsplit piece)."""
        computed = self.chunk_systems.get(piece.index, self.system)
        if self.task.replay is None or not self.settings.records.pin_system:
            return computed
        book = self.task.replay.book
        found = book.piece_system(piece.sha256)
        if found is None and piece.index < len(self.chunks):
            found = book.piece_system(self.chunks[piece.index].sha256)
        if found is None:
            return computed
        content, recorded_run = found
        if content != computed:
            self.say("the recorded system prompt differs from this run's — replaying with the "
                     "recorded one")  # fmt: skip
            # The trace names what was sent: the chunk's carryover prompt, else the segment's.
            if piece.index in self.chunk_systems:
                self.chunk_systems[piece.index] = content
            else:
                self.system = content
        self.pinned_from = self.pinned_from or recorded_run
        return content

    def user(self, piece: Piece) -> str:
        return user_turn(
            self.job.source, piece.index, piece.total, piece.text, self.block_text(piece)
        )

    def block_text(self, piece: Piece) -> str | None:
        """--chunk-context: the chunk's block; a split sub-piece keeps its chunk's."""
        block = self.blocks.get(piece.index)
        return block.text if block is not None else None

    def say(self, text: str) -> None:
        """A stderr line about the segment, said once."""
        line = f"{FAILURE_PREFIX}{self.job.source}: {text}"
        if line not in self.notes:
            self.notes.append(line)

    def note(self, piece: Piece, text: str) -> None:
        """A stderr line about a piece, said once per segment."""
        self.say(f"{chunk_prefix(piece)}: {text}" if piece.total > 1 else text)

    def about(self, piece: Piece, program: Program[R]) -> Program[R]:
        """`program` — a round of `piece` — with its notes said about the piece: the notes
        it yields, and the reason of each ladder move it logs (a demotion has its own)."""
        sent: Any = None
        thrown: Exception | None = None
        while True:
            try:
                effect = program.throw(thrown) if thrown is not None else program.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            sent, thrown = None, None
            if isinstance(effect, Say):
                self.note(piece, effect.text)
                continue
            if isinstance(effect, LogMove) and effect.record["move"] != "demote":
                self.note(piece, effect.record["reason"])
            try:
                sent = yield effect
            except Exception as error:  # thrown in (the run stops): the round's to handle
                thrown = error
