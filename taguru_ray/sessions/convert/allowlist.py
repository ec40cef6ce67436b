"""The versioned allow-lists: every key a converter meets is mapped, dropped by name, or refused.

Agent formats are internal and drift (SESSIONS.md §1), so a converter that skipped
what it did not know would lose turns silently the day a format changed. Instead each
record or block type lists its keys in three sets:

- mapped: read into the unified event or session;
- dropped: known to carry nothing a turn needs (usage, requestId, signature,
  encrypted_content, …), dropped by name;
- empty-only: known, dropped while null or empty; a value refuses, since the
  converter does not know what to do with it (Claude Code's ``citations: null``).

Whole record or block types known to carry nothing (``token_count``,
``turn_context``, ``file-history-snapshot``, …) are dropped by name without looking
inside; their text was still read by the secret scan. Anything else refuses the
session with its line and JSON path, never its value. Free-form payloads
(``tool_use.input``, ``toolUseResult``, function ``arguments``) are opaque: taken or
dropped whole, never walked. A change to any table is a new version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.sessions.convert.refusal import Refused, child, type_name

_EMPTY: tuple[object, ...] = (None, "", [], {})


@dataclass(frozen=True)
class Shape:
    mapped: frozenset[str]
    dropped: frozenset[str] = frozenset()
    empty_only: frozenset[str] = frozenset()


def shape(mapped: str, dropped: str = "", empty_only: str = "") -> Shape:
    """A shape from space-separated key names, so a table reads as a list."""
    return Shape(
        frozenset(mapped.split()), frozenset(dropped.split()), frozenset(empty_only.split())
    )


@dataclass(frozen=True)
class AllowList:
    """One agent format's allow-list: shapes by record/block type, and whole types dropped."""

    agent: str
    version: int
    shapes: Mapping[str, Shape]
    dropped_types: Mapping[str, frozenset[str]] = field(default_factory=dict)  # by context

    @property
    def tag(self) -> str:
        """How a refusal names it: ``claude-code allow-list v1``."""
        return f"{self.agent} allow-list v{self.version}"

    def drops(self, context: str, type_: object) -> bool:
        """Whether records of ``type_`` in ``context`` (``line``, ``block``…) are dropped whole."""
        return isinstance(type_, str) and type_ in self.dropped_types.get(context, frozenset())

    def walk(self, line: int) -> Walk:
        return Walk(self, line)


@dataclass(frozen=True)
class Walk:
    """One record read under an allow-list: every refusal carries its line and the tag."""

    allow: AllowList
    line: int

    def refuse(self, reason: str, path: str) -> Refused:
        return Refused(f"{reason} ({self.allow.tag})", line=self.line, path=path)

    def unknown_type(self, value: object, path: str) -> Refused:
        return self.refuse(f"unknown type{type_name(value)}", path)

    def obj(self, value: object, shape: str, path: str) -> dict[str, Any]:
        """``value`` as an object whose every key ``shape`` knows (or a refusal)."""
        if not isinstance(value, dict):
            raise self.refuse("expected a JSON object", path)
        known = self.allow.shapes[shape]
        for key, item in value.items():
            if key in known.mapped or key in known.dropped:
                continue
            if key in known.empty_only:
                if item in _EMPTY:
                    continue
                raise self.refuse("a field known only empty has a value", child(path, key))
            raise self.refuse("unknown field", child(path, key))
        return value

    def text(self, obj: Mapping[str, Any], key: str, path: str) -> str:
        """A required string field."""
        value = obj.get(key)
        if not isinstance(value, str):
            what = "missing" if key not in obj else "expected a string"
            raise self.refuse(what, child(path, key))
        return value

    def maybe_text(self, obj: Mapping[str, Any], key: str, path: str) -> str | None:
        """An optional string field: absent or null is None."""
        value = obj.get(key)
        if value is None or isinstance(value, str):
            return value
        raise self.refuse("expected a string", child(path, key))

    def items(self, obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
        """An optional list field: absent or null is empty."""
        value = obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.refuse("expected a list", child(path, key))
        return value


# --- Claude Code v1 (~/.claude/projects/<cwd>/<sessionId>.jsonl) -----------------------------

_CC_ENVELOPE = (
    "type uuid parentUuid logicalParentUuid sessionId timestamp isSidechain isMeta cwd gitBranch "
    "agentId"
)
_CC_ENVELOPE_DROPPED = (
    "userType version slug teamName entrypoint requestId level isVisibleInTranscriptOnly"
)

CLAUDE_CODE = AllowList(
    "claude-code",
    1,
    {
        "line.user": shape(
            f"{_CC_ENVELOPE} message isCompactSummary",
            f"{_CC_ENVELOPE_DROPPED} toolUseResult sourceToolUseID thinkingMetadata todos "
            "permissionMode imagePasteIds promptId mcpMeta planContent",
        ),
        "line.assistant": shape(
            f"{_CC_ENVELOPE} message isApiErrorMessage", f"{_CC_ENVELOPE_DROPPED} error"
        ),
        "line.system": shape(
            f"{_CC_ENVELOPE} content subtype",
            f"{_CC_ENVELOPE_DROPPED} hasOutput hookErrors hookInfos hookCount "
            "preventedContinuation stopReason compactMetadata toolUseID durationMs error cause "
            "retryInMs retryAttempt maxRetries",
        ),
        "line.summary": shape("type summary", "leafUuid cwd sessionId uuid timestamp"),
        "message.user": shape("role content"),
        "message.assistant": shape(
            "id role content model",
            "type stop_reason stop_sequence usage container context_management",
        ),
        "block.text": shape("type text", empty_only="citations"),
        "block.thinking": shape("type thinking", "signature"),
        "block.tool_use": shape("type id name input", "caller"),
        "block.tool_result": shape("type tool_use_id content is_error", "agentId"),
    },
    {
        "line": frozenset(
            {
                "file-history-snapshot",
                "queue-operation",
                "attachment",
                "ai-title",
                "custom-title",
                "progress",
                "agent-setting",
                "pr-link",
                "last-prompt",
            }
        ),
        "block": frozenset({"image", "document", "redacted_thinking"}),
    },
)

# --- Codex rollout v1 (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl) --------------------------

# Notifications whose text is either a copy of a response_item or telemetry.
_CODEX_EVENTS_DROPPED = """
token_count agent_reasoning agent_reasoning_raw_content agent_reasoning_section_break
agent_message_delta agent_reasoning_delta agent_reasoning_raw_content_delta
agent_message_content_delta reasoning_content_delta reasoning_raw_content_delta
task_started task_complete turn_started turn_complete turn_aborted session_configured
mcp_startup_update mcp_startup_complete mcp_tool_call_begin mcp_tool_call_end
web_search_begin web_search_end exec_command_begin exec_command_output_delta exec_command_end
terminal_interaction view_image_tool_call exec_approval_request elicitation_request
apply_patch_approval_request deprecation_notice background_event undo_started undo_completed
stream_error patch_apply_begin patch_apply_end turn_diff get_history_entry_response
mcp_list_tools_response list_custom_prompts_response list_skills_response
skills_update_available plan_update shutdown_complete entered_review_mode exited_review_mode
raw_response_item item_started item_completed context_compacted thread_rolled_back
thread_name_updated error warning collab_tool_call model_reroute
"""

CODEX = AllowList(
    "codex",
    1,
    {
        "line": shape("timestamp type payload", "ordinal"),
        "session_meta": shape(
            "id timestamp cwd git",
            "session_id forked_from_id parent_thread_id originator cli_version instructions "
            "source thread_source model_provider agent_nickname agent_role agent_path "
            "base_instructions dynamic_tools memory_mode context_window multi_agent_version "
            "user_id team_id org_id",
        ),
        "git": shape("branch", "commit_hash repository_url"),
        "compacted": shape("message", "replacement_history"),
        "message": shape("type role content", "id end_turn phase status"),
        "input_text": shape("type text"),
        "output_text": shape("type text", "annotations logprobs"),
        "reasoning": shape("type summary", "id content encrypted_content status"),
        "summary_text": shape("type text"),
        "function_call": shape("type name arguments call_id", "id status namespace"),
        "function_call_output": shape("type call_id output", "id status"),
        "output": shape("content success", "content_items"),
        "custom_tool_call": shape("type name input call_id", "id status"),
        "custom_tool_call_output": shape("type call_id output", "id status"),
        "local_shell_call": shape("type call_id action", "id status"),
        "web_search_call": shape("type action", "id status"),
        "user_message": shape("type message", "images local_images text_elements kind"),
        "agent_message": shape("type message", "phase"),
    },
    {
        "line": frozenset({"turn_context"}),
        "response_item": frozenset({"ghost_snapshot", "compaction", "compaction_summary"}),
        "content": frozenset({"input_image"}),
        "event_msg": frozenset(_CODEX_EVENTS_DROPPED.split()),
    },
)

# --- OpenAI chat v1 (Chat Completions messages: a JSON array, or JSON Lines) ------------------

OPENAI_CHAT = AllowList(
    "openai-chat",
    1,
    {
        "message": shape(
            "role content name tool_calls tool_call_id function_call refusal reasoning_content",
            "audio annotations",
        ),
        "text": shape("type text"),
        "refusal": shape("type refusal"),
        "tool_call": shape("id type function", "index"),
        "function": shape("name arguments"),
    },
    {"part": frozenset({"image_url", "input_audio", "file"})},
)

ALLOWLISTS: Mapping[str, AllowList] = {
    allow.agent: allow for allow in (CLAUDE_CODE, CODEX, OPENAI_CHAT)
}
