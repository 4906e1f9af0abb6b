"""TITO tokenizer — incremental tokenization for pretokenized prefix reuse.

``TITOTokenizer`` computes incremental token IDs for messages appended after the assistant's generated token sequence, then merges them with the pretokenized prefix — handling model-specific boundary tokens at the junction.

The default implementation renders the complete appended suffix and the next generation prompt once under a synthetic ``[dummy_system, dummy_assistant]`` prefix.  Model-specific subclasses only override ``merge_tokens`` for boundary quirks at the prefix junction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

try:
    from enum import StrEnum
except ImportError:
    from backports.strenum import StrEnum
from pathlib import Path
from typing import Any

from miles.utils.chat_template_utils import deepseek, template
from miles.utils.chat_template_utils.message_matcher_hub import assert_messages_append_only_with_allowed_role
from miles.utils.chat_template_utils.token_seq_comparator import TokenSeqComparator

logger = logging.getLogger(__name__)

# Bundled fixed-template files live under this directory; ``FixedTemplate.template``
# values are filenames relative to it.
TEMPLATE_DIR = Path(__file__).parent / "templates"

# Roles that a fixed template may support after the pretokenized assistant
# prefix.  A family narrows this set only when its registered renderer cannot
# preserve every role append-only.
VALID_APPEND_ROLES: tuple[str, ...] = ("tool", "user", "system", "assistant")
ALL_APPEND_ROLES: frozenset[str] = frozenset(VALID_APPEND_ROLES)

_DUMMY_SYSTEM: dict[str, Any] = {"role": "system", "content": "dummy system"}


@dataclass(frozen=True)
class FixedTemplate:
    """A family's fixed chat template, required kwargs, and append surface.

    ``template`` is a path relative to ``TEMPLATE_DIR`` for a bundled fixed
    template, or ``None`` to keep the HF-native template (kwargs-only fix).
    ``extra_kwargs`` carry the family's preserve-think constants, so renders
    stay append-only.  ``allowed_append_roles`` defaults to the maximal
    four-role surface; a known restricted template must narrow it explicitly.
    """

    template: str | None = None
    extra_kwargs: dict[str, Any] = field(default_factory=dict)
    allowed_append_roles: frozenset[str] = ALL_APPEND_ROLES

    def __post_init__(self) -> None:
        roles = frozenset(self.allowed_append_roles)
        invalid = roles - ALL_APPEND_ROLES
        if invalid:
            raise ValueError(
                f"Unknown FixedTemplate allowed_append_roles: {sorted(invalid)}; "
                f"supported roles are {sorted(ALL_APPEND_ROLES)}"
            )
        object.__setattr__(self, "allowed_append_roles", roles)


def _build_dummy_assistant(stored_assistant: dict[str, Any]) -> dict[str, Any]:
    """Build a dummy assistant that preserves the stored turn's tool calls."""
    return {
        "role": "assistant",
        "content": "",
        "reasoning_content": " ",
        "tool_calls": stored_assistant.get("tool_calls") or [],
    }


# ---------------------------------------------------------------------------
# Base / default tokenizer
# ---------------------------------------------------------------------------
# TODO: split different model's TITO tokenizer into different files


class TITOTokenizer:
    """Incremental tokenization and prefix merging for appended messages."""

    max_trim_tokens: int = 0
    trailing_token_ids: frozenset[int] = frozenset()
    chat_template_kwarg_aliases: frozenset[str] = frozenset()

    # The family's fixed renderer contract. DEFAULT uses the model's native
    # template with the maximal best-effort append surface.
    FIXED_TEMPLATE: FixedTemplate = FixedTemplate()

    # sglang ``--reasoning-parser`` and ``--tool-call-parser`` values bound to
    # this family.
    reasoning_parser: str | None = None
    tool_call_parser: str | None = None

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
        special_token_ids: set[int] | None = None,
    ):
        self.tokenizer = tokenizer
        provided_kwargs = dict(chat_template_kwargs or {})
        for key, value in self.FIXED_TEMPLATE.extra_kwargs.items():
            if key in provided_kwargs and provided_kwargs[key] != value:
                raise ValueError(
                    f"chat template kwarg {key}={provided_kwargs[key]!r} conflicts with "
                    f"the value registered for {type(self).__name__}: {value!r}"
                )
            provided_kwargs[key] = value
        self.chat_template_kwargs = provided_kwargs
        self._assistant_start_str = assistant_start_str
        self.allowed_append_roles = self.FIXED_TEMPLATE.allowed_append_roles
        self.special_token_ids: set[int] = special_token_ids

    def clone_with_chat_template_kwargs(self, request_kwargs: dict[str, Any]) -> TITOTokenizer:
        """Create a request-scoped copy with negligible overhead."""
        return type(self)(
            self.tokenizer,
            chat_template_kwargs=template.merge_chat_template_kwargs(
                self.chat_template_kwargs,
                request_kwargs,
                alias_keys=self.chat_template_kwarg_aliases,
            ),
            assistant_start_str=self._assistant_start_str,
        )

    def create_comparator(self) -> TokenSeqComparator:
        """Create a :class:`TokenSeqComparator` configured with this
        tokenizer's model-specific settings."""
        return TokenSeqComparator(
            self.tokenizer,
            assistant_start_str=self._assistant_start_str,
            special_token_ids=self.special_token_ids,
            trim_trailing_ids=self.trailing_token_ids or None,
        )

    def apply_chat_template(
        self,
        messages: list[dict[str, Any]],
        *,
        add_generation_prompt: bool,
        tools: list[dict[str, Any]] | None = None,
        tokenize: bool = False,
    ) -> str | list[int]:
        return template.apply_chat_template(
            messages,
            tokenizer=self.tokenizer,
            tokenize=tokenize,
            add_generation_prompt=add_generation_prompt,
            tools=tools,
            **self.chat_template_kwargs,
        )

    def _encode_text(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _tokenize_rendered_suffix(
        self,
        base_messages: list[dict[str, Any]],
        appended_messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = False,
    ) -> list[int]:
        """Render *base_messages* and *base_messages + appended_messages*, return
        tokens for the suffix.

        When *add_generation_prompt* is True and *appended_messages* is empty,
        this computes the generation-prompt suffix (the assistant opener tokens).
        """
        text_without = self.apply_chat_template(base_messages, add_generation_prompt=False, tools=tools)
        text_with = self.apply_chat_template(
            base_messages + appended_messages,
            add_generation_prompt=add_generation_prompt,
            tools=tools,
        )
        if not text_with.startswith(text_without):
            roles = [msg["role"] for msg in appended_messages] if appended_messages else ["generation_prompt"]
            raise ValueError(f"rendered suffix diff failed for {roles}")
        return self._encode_text(text_with[len(text_without) :])

    def tokenize_additional_messages(
        self,
        old_messages: list[dict[str, Any]],
        new_messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        """Compute incremental token IDs for messages appended after the
        pretokenized prefix.

        Appended roles must be listed in ``self.allowed_append_roles``.  The
        method validates that *new_messages* is an append-only extension of
        *old_messages* via ``assert_messages_append_only_with_allowed_role``.

        Args:
            old_messages: Previously stored messages (prefix).
            new_messages: Full new message list (must be a superset of
                *old_messages* with only allowed-role messages appended).
            tools: Tool definitions in OpenAI format (may vary per call).

        Returns:
            Incremental token IDs (including the generation prompt) that,
            when merged with pretokenized prefix via ``merge_tokens``,
            form the full prompt token IDs.
        """
        assert_messages_append_only_with_allowed_role(old_messages, new_messages, self.allowed_append_roles)
        appended_messages = new_messages[len(old_messages) :]
        return self._tokenize_rendered_suffix(
            [_DUMMY_SYSTEM, _build_dummy_assistant(old_messages[-1])],
            appended_messages,
            tools=tools,
            add_generation_prompt=True,
        )

    def merge_tokens(
        self,
        old_messages: list[dict[str, Any]],
        new_messages: list[dict[str, Any]],
        pretokenized_token_ids: list[int],
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        """Merge *pretokenized_token_ids* with incremental tokens to produce
        the complete prompt token IDs (including generation prompt).

        The default implementation is simple concatenation.  Subclasses
        override this to handle model-specific boundary token logic.
        """
        incremental = self.tokenize_additional_messages(old_messages, new_messages, tools)
        return list(pretokenized_token_ids) + incremental


# ---------------------------------------------------------------------------
# Qwen3 implementation
# ---------------------------------------------------------------------------


class Qwen3TITOTokenizer(TITOTokenizer):
    """Qwen3 variant: handles missing newline at the boundary.

    The Qwen3 chat template emits ``<|im_end|>\\n`` after every message, but
    the model stops at ``<|im_end|>`` without generating the trailing ``\\n``.
    ``merge_tokens`` inserts the missing newline so that the pretokenized
    prefix matches the canonical template output.
    """

    reasoning_parser = "qwen3"
    tool_call_parser = "qwen25"

    FIXED_TEMPLATE = FixedTemplate(
        template="qwen3_fixed.jinja",
        extra_kwargs={"clear_thinking": False},
    )

    _default_assistant_start_str: str = "<|im_start|>assistant"

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
    ):
        super().__init__(
            tokenizer,
            chat_template_kwargs,
            assistant_start_str or self._default_assistant_start_str,
        )
        nl_ids = tokenizer.encode("\n", add_special_tokens=False)
        assert len(nl_ids) == 1, f"Expected single newline token, got {nl_ids}"
        self._newline_id: int = nl_ids[0]
        self._im_end_id: int = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.trailing_token_ids = frozenset({self._newline_id})

    def merge_tokens(
        self,
        old_messages: list[dict[str, Any]],
        new_messages: list[dict[str, Any]],
        pretokenized_token_ids: list[int],
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        incremental = self.tokenize_additional_messages(old_messages, new_messages, tools)
        prefix = list(pretokenized_token_ids)
        if prefix and prefix[-1] == self._im_end_id:
            prefix.append(self._newline_id)
        return prefix + incremental


# Qwen3.5 and Qwen3-Next-Thinking share the ``<|im_end|>`` boundary handling
# with Qwen3, so they reuse Qwen3TITOTokenizer's token-level logic via plain
# inheritance.  They are still split into named subclasses because each owns
# its own ``FIXED_TEMPLATE`` pointing to a distinct fixed jinja, even
# though their boundary behavior is identical.


class Qwen35TITOTokenizer(Qwen3TITOTokenizer):
    """Qwen3.5 — same boundary behavior as Qwen3, distinct fixed template."""

    tool_call_parser = "qwen3_coder"

    FIXED_TEMPLATE = FixedTemplate(
        template="qwen3.5_fixed.jinja",
        extra_kwargs={"clear_thinking": False},
        allowed_append_roles=frozenset({"tool", "user", "assistant"}),
    )


class QwenNextTITOTokenizer(Qwen3TITOTokenizer):
    """Qwen3-Thinking-2507 / Qwen3-Next-Thinking — same boundary behavior as
    Qwen3, distinct (shared) fixed template."""

    FIXED_TEMPLATE = FixedTemplate(
        template="qwen3_thinking_2507_and_next_fixed.jinja",
        extra_kwargs={"clear_thinking": False},
    )


# ---------------------------------------------------------------------------
# GLM 4.7 implementation
# ---------------------------------------------------------------------------


class GLM47TITOTokenizer(TITOTokenizer):
    """GLM 4.7 variant: handles ambiguous boundary tokens in ``merge_tokens``.

    ``<|user|>`` and ``<|observation|>`` are both assistant stop tokens *and*
    next-message start tokens in the chat template.  In ``merge_tokens``,
    the last token of the pretokenized prefix is always stripped when it is
    one of these boundary tokens — whether it matches the first incremental
    token (overlap) or differs (e.g. model stopped with ``<|observation|>`` but
    next turn is ``<|user|>`` because the tool call failed and a system message
    is injected instead).
    """

    reasoning_parser = "glm45"
    tool_call_parser = "glm47"

    # GLM's HF-native chat template already exposes a ``clear_thinking`` kwarg,
    # so no fixed-jinja patch is needed for either append surface.
    FIXED_TEMPLATE = FixedTemplate(
        template=None,
        extra_kwargs={"clear_thinking": False},
    )

    max_trim_tokens: int = 1
    _default_assistant_start_str: str = "<|assistant|>"

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
    ):
        super().__init__(
            tokenizer,
            chat_template_kwargs,
            assistant_start_str or self._default_assistant_start_str,
        )
        self._observation_id: int = tokenizer.convert_tokens_to_ids("<|observation|>")
        self._user_id: int = tokenizer.convert_tokens_to_ids("<|user|>")
        self._ambiguous_boundary_ids: set[int] = {self._observation_id, self._user_id}
        self.trailing_token_ids = frozenset(self._ambiguous_boundary_ids)

    def merge_tokens(
        self,
        old_messages: list[dict[str, Any]],
        new_messages: list[dict[str, Any]],
        pretokenized_token_ids: list[int],
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        incremental = self.tokenize_additional_messages(old_messages, new_messages, tools)
        prefix = list(pretokenized_token_ids)
        if prefix and prefix[-1] in self._ambiguous_boundary_ids:
            prefix = prefix[:-1]
        return prefix + incremental


# ---------------------------------------------------------------------------
# Nemotron 3 implementation
# ---------------------------------------------------------------------------


class Nemotron3TITOTokenizer(Qwen3TITOTokenizer):
    """NVIDIA Nemotron 3 family: ``<|im_end|>\\n`` message boundaries.

    Inherits Qwen3's boundary handling — Nemotron 3 emits the same
    ``<|im_end|>\\n`` after every message and the model stops at
    ``<|im_end|>`` without the trailing newline.

    No fixed jinja is shipped — HF native template is append-only when
    ``truncate_history_thinking=False``.  Multi-user-turn surfaces
    auto-merge that kwarg via ``extra_kwargs`` below; ``{tool}``-only does
    not need it (no user-turn boundary to truncate across).

    The plain-text assistant turn does not roundtrip cleanly under
    sglang's upstream ``nemotron_3`` reasoning parser (it keeps a trailing
    ``\\n`` in ``reasoning_content``), so step-4 ``assistant_text`` soft
    assertion is expected to fail until the parser is patched upstream —
    out of scope for this family registration.
    """

    reasoning_parser = "nemotron_3"
    tool_call_parser = "qwen3_coder"

    FIXED_TEMPLATE = FixedTemplate(
        template=None,
        extra_kwargs={"truncate_history_thinking": False},
    )

    _default_assistant_start_str: str = "<|im_start|>assistant\n"

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
    ):
        super().__init__(
            tokenizer,
            chat_template_kwargs,
            assistant_start_str or self._default_assistant_start_str,
        )


# ---------------------------------------------------------------------------
# Kimi K2 implementation
# ---------------------------------------------------------------------------


def _kimi_segment_special_token_ids(tokenizer: Any) -> set[int]:
    """Kimi specials minus ``<|im_middle|>`` (intra-turn role-name/body
    separator, not a role boundary; must not be a segment boundary)."""
    return TokenSeqComparator.collect_special_ids(tokenizer) - {tokenizer.convert_tokens_to_ids("<|im_middle|>")}


class Kimi25TITOTokenizer(TITOTokenizer):
    """Moonshot Kimi K2.5: ``<|im_end|>`` boundary (no trailing newline).

    K2.5 has no kwarg escape hatch for the "drop reasoning of prior assistants
    once a new non-tool-call assistant arrives" behavior.  Ships a
    bundled fixed jinja that wraps the ``last_non_tool_call_assistant_msg``
    loop in ``{%- if not preserve_thinking -%}`` so multi-user-turn rollout
    can pass ``preserve_thinking=True`` to keep history append-only.  Only the
    ``{tool, user}`` surface is registered (per current onboarding scope).
    """

    FIXED_TEMPLATE = FixedTemplate(
        template="kimi_k25_fixed.jinja",
        extra_kwargs={"preserve_thinking": True},
    )

    _default_assistant_start_str: str = "<|im_assistant|>"

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
    ):
        super().__init__(
            tokenizer,
            chat_template_kwargs,
            assistant_start_str or self._default_assistant_start_str,
            special_token_ids=_kimi_segment_special_token_ids(tokenizer),
        )


class Kimi26TITOTokenizer(TITOTokenizer):
    """Moonshot Kimi K2.6: same boundary as K2.5 + native ``preserve_thinking`` kwarg.

    K2.6's HF-native template already carries the ``preserve_thinking`` gate
    that K2.5 needs patched in.  No bundled fixed
    template required; ``{tool, user}`` row registers ``template=None`` and
    auto-merges ``preserve_thinking=True`` for multi-user-turn rollout.

    Tool-call parser is bound to ``kimi_k2_raw_id`` rather than ``kimi_k2``:
    RL trajectories need the model-emitted ``tool_call_id`` to round-trip
    verbatim across turns (no ``history_tool_calls_cnt`` renumbering), and
    miles is the primary consumer of this TITO family.
    """

    reasoning_parser = "kimi_k2"
    tool_call_parser = "kimi_k2_raw_id"

    FIXED_TEMPLATE = FixedTemplate(
        template=None,
        extra_kwargs={"preserve_thinking": True},
    )

    _default_assistant_start_str: str = "<|im_assistant|>"

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
    ):
        super().__init__(
            tokenizer,
            chat_template_kwargs,
            assistant_start_str or self._default_assistant_start_str,
            special_token_ids=_kimi_segment_special_token_ids(tokenizer),
        )


# ---------------------------------------------------------------------------
# MiniMax M2 family implementation (M2.5 and M2.7 share tokenizer/arch and
# stop-token semantics; only their default system identity strings differ).
# ---------------------------------------------------------------------------


class MinimaxM25TITOTokenizer(TITOTokenizer):
    """MiniMax-M2.5 family: bespoke ``]~!b[`` / ``[e~[`` / ``]~b]`` tag set.

    Shares tokenizer.json (sha256) and architecture (MiniMaxM2ForCausalLM)
    with M2.7 — only the chat template's default system identity string
    differs (``MiniMax-M2.5`` vs ``MiniMax-M2.7``).  Stop-token handling
    (``[e~[`` / trailing newline) is identical to M2.7.

    Reasoning is gated by a per-message ``last_user_index`` check:
    ``reasoning_content`` is only rendered for assistant turns *after* the
    last ``user`` — appending a new ``user`` therefore strips prior assistant
    ``<think>`` blocks and breaks append-only.  Only ``{tool}`` surface is
    registered on HF-native template for that reason; multi-user-turn
    requires the fixed jinja with ``clear_thinking=False`` to always
    preserve history reasoning.  The fixed Jinja renders tool, user, and
    assistant appends, but ignores mid-session system messages, so that role
    is excluded from its capability.
    """

    reasoning_parser = "minimax-append-think"
    tool_call_parser = "minimax-m2"

    FIXED_TEMPLATE = FixedTemplate(
        template="minimax_m25_fixed.jinja",
        extra_kwargs={"clear_thinking": False},
        allowed_append_roles=frozenset({"tool", "user", "assistant"}),
    )

    _default_assistant_start_str: str = "]~b]ai"

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
    ):
        super().__init__(
            tokenizer,
            chat_template_kwargs,
            assistant_start_str or self._default_assistant_start_str,
        )
        nl_ids = tokenizer.encode("\n", add_special_tokens=False)
        assert len(nl_ids) == 1, f"Expected single newline token, got {nl_ids}"
        self._newline_id: int = nl_ids[0]
        self._eos_id: int = tokenizer.convert_tokens_to_ids("[e~[")
        self.trailing_token_ids = frozenset({self._newline_id})

    def merge_tokens(
        self,
        old_messages: list[dict[str, Any]],
        new_messages: list[dict[str, Any]],
        pretokenized_token_ids: list[int],
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        incremental = self.tokenize_additional_messages(old_messages, new_messages, tools)
        prefix = list(pretokenized_token_ids)
        if prefix and prefix[-1] == self._eos_id:
            prefix.append(self._newline_id)
        return prefix + incremental


class MinimaxM27TITOTokenizer(MinimaxM25TITOTokenizer):
    """MiniMax-M2.7 family: tokenizer / arch / stop-token semantics identical
    to M2.5; the chat template only differs by default system identity string.

    Inherits parsers, ``__init__``, ``merge_tokens``, and
    ``_default_assistant_start_str`` from M2.5; only ``FIXED_TEMPLATE``
    is rebound to ``minimax_m27_fixed.jinja`` so the fixed-template lookup
    points at the M2.7-derived jinja.
    """

    FIXED_TEMPLATE = FixedTemplate(
        template="minimax_m27_fixed.jinja",
        extra_kwargs={"clear_thinking": False},
        allowed_append_roles=frozenset({"tool", "user", "assistant"}),
    )


# ---------------------------------------------------------------------------
# DeepSeek V3.2 implementation
# ---------------------------------------------------------------------------

_DEEPSEEK_MODE_KWARG_ALIASES = frozenset({"thinking_mode", "enable_thinking", "thinking"})


class DeepSeekV32TITOTokenizer(TITOTokenizer):
    """DeepSeek V3.2 — miles' vendored copy of the official ``encoding_dsv32``.

    V3.2 ships no jinja chat_template; prompts render through
    ``templates.encoding_dsv32.encode_messages``, and miles'
    ``apply_chat_template`` routes any V3.2 tokenizer to the thin
    ``chat_template_utils.deepseek`` bridge.  TITO incremental tokenization
    rides that same bridge.

    Upstream ``encoding_dsv32`` gates every thinking block on
    ``last_user_idx``: appending a *user* turn re-classifies every prior
    assistant as "before last user" and strips its thinking block, which is
    not append-only.  The vendored copy honors ``drop_thinking=False`` at the
    render level (like ``encoding_dsv4``), so every surface pins it and the
    ``{tool, user}`` surface becomes legal.
    """

    reasoning_parser = "deepseek-v3"
    tool_call_parser = "deepseekv32"
    chat_template_kwarg_aliases = _DEEPSEEK_MODE_KWARG_ALIASES

    FIXED_TEMPLATE = FixedTemplate(
        template=None,
        extra_kwargs={"drop_thinking": False},
    )

    _DEFAULT_ASSISTANT_START = "<｜Assistant｜>"

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
    ):
        # V3.2 has no jinja template, so assistant_start_str can't be sniffed
        # from one; pin it explicitly.  The comparator keys off the User /
        # Assistant sentinels to find assistant-content boundaries.
        super().__init__(
            tokenizer,
            chat_template_kwargs=chat_template_kwargs,
            assistant_start_str=assistant_start_str or self._DEFAULT_ASSISTANT_START,
            special_token_ids={
                tokenizer.convert_tokens_to_ids("<｜User｜>"),
                tokenizer.convert_tokens_to_ids("<｜Assistant｜>"),
            },
        )
        self.chat_template_kwargs = {
            **self.chat_template_kwargs,
            "thinking": deepseek.V32.render_thinking_enabled(self.chat_template_kwargs),
        }


# ---------------------------------------------------------------------------
# DeepSeek V4 implementation
# ---------------------------------------------------------------------------


class DeepSeekV4TITOTokenizer(TITOTokenizer):
    """DeepSeek V4 — official encoder via sglang's ``encoding_dsv4``.

    Like V3.2, V4 ships no jinja chat_template; miles' ``apply_chat_template``
    routes any V4 tokenizer to the ``chat_template_utils.deepseek`` bridge, and
    TITO incremental tokenization rides that same bridge to stay byte-aligned
    with what the runtime serves.
    """

    reasoning_parser = "deepseek-v4"
    tool_call_parser = "deepseekv4"
    chat_template_kwarg_aliases = _DEEPSEEK_MODE_KWARG_ALIASES

    FIXED_TEMPLATE = FixedTemplate(
        template=None,
        extra_kwargs={"drop_thinking": False},
        allowed_append_roles=frozenset({"tool", "user", "assistant"}),
    )

    _DEFAULT_ASSISTANT_START = "<｜Assistant｜>"

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
    ):
        super().__init__(
            tokenizer,
            chat_template_kwargs=chat_template_kwargs,
            assistant_start_str=assistant_start_str or self._DEFAULT_ASSISTANT_START,
            special_token_ids={
                tokenizer.convert_tokens_to_ids("<｜User｜>"),
                tokenizer.convert_tokens_to_ids("<｜Assistant｜>"),
            },
        )
        self._assistant_id: int = tokenizer.convert_tokens_to_ids("<｜Assistant｜>")
        self._think_bracket_ids: set[int] = {
            tokenizer.convert_tokens_to_ids("<think>"),
            tokenizer.convert_tokens_to_ids("</think>"),
        }
        self.trailing_token_ids = frozenset({self._assistant_id} | self._think_bracket_ids)
        # sglang's dsv4 parser separates reasoning only when the request carries
        # `thinking` (DeepSeek-V3.1's template kwarg, kept for the V4 family);
        # make the effective render mode explicit so the session server forwards it.
        self.chat_template_kwargs = {
            **self.chat_template_kwargs,
            "thinking": deepseek.V4.render_thinking_enabled(self.chat_template_kwargs),
        }

    def tokenize_additional_messages(
        self,
        old_messages: list[dict[str, Any]],
        new_messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> list[int]:
        """Diff real-history renders because V4 folds adjacent ``tool``/``user`` turns."""
        assert_messages_append_only_with_allowed_role(old_messages, new_messages, self.allowed_append_roles)
        text_old = self.apply_chat_template(old_messages, add_generation_prompt=False, tools=tools)
        text_new = self.apply_chat_template(new_messages, add_generation_prompt=True, tools=tools)
        if not text_new.startswith(text_old):
            raise ValueError(
                "deepseek_v4 render is not append-only for the appended messages "
                "(prefix render changed; check drop_thinking and tool-result ordering)"
            )
        return self._encode_text(text_new[len(text_old) :])


class InklingTITOTokenizer(TITOTokenizer):
    """Inkling family (Inkling / Inkling-Small).

    The runtime serves Inkling through sglang's token-level renderer
    (``chat_encoding_spec == "inkling"``).  The fixed template matches its
    empty scalar-content behavior: no empty text block, and no bare assistant
    terminator when the turn contains no rendered blocks.  All four message-role
    sentinels remain comparator boundaries so non-assistant mismatches are hard
    failures after an assistant turn.
    """

    reasoning_parser = "inkling"
    tool_call_parser = "inkling"

    FIXED_TEMPLATE = FixedTemplate(template="inkling_fixed.jinja")

    _DEFAULT_ASSISTANT_START = "<|message_model|>"

    def __init__(
        self,
        tokenizer: Any,
        chat_template_kwargs: dict[str, Any] | None = None,
        assistant_start_str: str | None = None,
    ):
        super().__init__(
            tokenizer,
            chat_template_kwargs=chat_template_kwargs,
            assistant_start_str=assistant_start_str or self._DEFAULT_ASSISTANT_START,
            special_token_ids={
                tokenizer.convert_tokens_to_ids("<|message_user|>"),
                tokenizer.convert_tokens_to_ids("<|message_model|>"),
                tokenizer.convert_tokens_to_ids("<|message_system|>"),
                tokenizer.convert_tokens_to_ids("<|message_tool|>"),
            },
        )


# ---------------------------------------------------------------------------
# Enum + Factory
# ---------------------------------------------------------------------------


class TITOTokenizerType(StrEnum):
    DEFAULT = "default"
    QWEN3 = "qwen3"
    QWEN35 = "qwen35"
    QWENNEXT = "qwennext"
    GLM47 = "glm47"
    NEMOTRON3 = "nemotron3"
    KIMI25 = "kimi25"
    KIMI26 = "kimi26"
    MINIMAX_M25 = "minimax_m25"
    MINIMAX_M27 = "minimax_m27"
    DEEPSEEKV32 = "deepseekv32"
    DEEPSEEKV4 = "deepseekv4"
    INKLING = "inkling"

    @classmethod
    def get_tokenizer_class(cls, t: TITOTokenizerType) -> type[TITOTokenizer]:
        """Resolve the concrete ``TITOTokenizer`` subclass for *t*."""
        match t:
            case cls.DEFAULT:
                return TITOTokenizer
            case cls.QWEN3:
                return Qwen3TITOTokenizer
            case cls.QWEN35:
                return Qwen35TITOTokenizer
            case cls.QWENNEXT:
                return QwenNextTITOTokenizer
            case cls.GLM47:
                return GLM47TITOTokenizer
            case cls.NEMOTRON3:
                return Nemotron3TITOTokenizer
            case cls.KIMI25:
                return Kimi25TITOTokenizer
            case cls.KIMI26:
                return Kimi26TITOTokenizer
            case cls.MINIMAX_M25:
                return MinimaxM25TITOTokenizer
            case cls.MINIMAX_M27:
                return MinimaxM27TITOTokenizer
            case cls.DEEPSEEKV32:
                return DeepSeekV32TITOTokenizer
            case cls.DEEPSEEKV4:
                return DeepSeekV4TITOTokenizer
            case cls.INKLING:
                return InklingTITOTokenizer
            case _:
                raise ValueError(f"Unknown TITOTokenizerType: {t!r}")


def get_tito_tokenizer(
    tokenizer: Any,
    tokenizer_type: TITOTokenizerType | str = TITOTokenizerType.DEFAULT,
    chat_template_kwargs: dict[str, Any] | None = None,
    assistant_start_str: str | None = None,
) -> TITOTokenizer:
    """Create a ``TITOTokenizer`` instance.

    Args:
        tokenizer: HuggingFace tokenizer object.
        tokenizer_type: Explicit type (string or enum).  Corresponds to the
            ``--tito-model`` CLI argument.
        chat_template_kwargs: Extra kwargs forwarded to ``template.apply_chat_template``.
        assistant_start_str: Decoded text prefix identifying assistant content
            segments (e.g. ``"<|im_start|>assistant"``).  Auto-detected from
            the chat template by default; pass explicitly to override.
    """
    if tokenizer is None:
        raise ValueError("tokenizer must not be None")
    if isinstance(tokenizer_type, str):
        tokenizer_type = TITOTokenizerType(tokenizer_type)
    cls = TITOTokenizerType.get_tokenizer_class(tokenizer_type)
    kwargs: dict[str, Any] = {"chat_template_kwargs": chat_template_kwargs}
    if assistant_start_str is not None:
        kwargs["assistant_start_str"] = assistant_start_str
    return cls(tokenizer, **kwargs)


# ---------------------------------------------------------------------------
# Fixed-template resolution (one template per family)
# ---------------------------------------------------------------------------


def resolve_fixed_chat_template(
    tito_model: TITOTokenizerType | str,
) -> tuple[str | None, dict[str, Any]]:
    """The family's fixed chat template and required kwargs.

    Returns ``(template_path, extra_kwargs)``:

    - ``template_path``: absolute path to a bundled ``.jinja`` file, or ``None``
      when the family registers HF-native (kwargs-only fix).
    - ``extra_kwargs``: kwargs owned by the registration and merged into
      ``template.apply_chat_template``.  Conflicting caller values are invalid.

    Template resolution depends only on ``tito_model``.  The DEFAULT family
    resolves to its native template (``None``) with no fixed kwargs.
    """
    if isinstance(tito_model, str):
        tito_model = TITOTokenizerType(tito_model)

    cls = TITOTokenizerType.get_tokenizer_class(tito_model)
    fixed = cls.FIXED_TEMPLATE

    path = str(TEMPLATE_DIR / fixed.template) if fixed.template else None
    logger.info(
        "tito_model=%s -> template=%s kwargs=%s allowed_append_roles=%s",
        tito_model.value,
        path,
        fixed.extra_kwargs,
        sorted(fixed.allowed_append_roles),
    )
    return path, dict(fixed.extra_kwargs)


# ---------------------------------------------------------------------------
# sglang parser resolution (per-family binding + assert-equal on user input)
# ---------------------------------------------------------------------------


def resolve_reasoning_and_tool_call_parser(
    tito_model: TITOTokenizerType | str,
    user_reasoning_parser: str | None = None,
    user_tool_call_parser: str | None = None,
) -> tuple[str | None, str | None]:
    """Resolve sglang ``--reasoning-parser`` and ``--tool-call-parser`` for the
    given TITO family.

    Both parsers are bound on the TITO subclass as class attributes because
    the model's reasoning / tool-call emission shapes are per-family facts.
    For each parser independently:

    * If the user didn't pass a value, return the family's bound value
      (which may itself be ``None`` for ``DEFAULT`` or unbound subclasses
      — the caller is then responsible for supplying one downstream).
    * If the user passed a value and the family is bound, assert equality;
      a mismatch is a configuration bug and raises ``ValueError`` rather
      than silently overriding.
    * If the user passed a value and the family is unbound, accept it.

    Returns ``(reasoning_parser, tool_call_parser)``.
    """
    if isinstance(tito_model, str):
        tito_model = TITOTokenizerType(tito_model)
    cls = TITOTokenizerType.get_tokenizer_class(tito_model)

    def _resolve_one(field: str, bound: str | None, user: str | None) -> str | None:
        if user is None:
            return bound
        if bound is None:
            return user
        if user != bound:
            raise ValueError(
                f"--{field.replace('_', '-')}={user!r} disagrees with the parser "
                f"registered for tito_model={tito_model.value!r}: {bound!r}. The "
                f"parser is bound on the TITO subclass; either pass {bound!r} or "
                f"omit the flag to auto-resolve."
            )
        return user

    return (
        _resolve_one("reasoning_parser", cls.reasoning_parser, user_reasoning_parser),
        _resolve_one("tool_call_parser", cls.tool_call_parser, user_tool_call_parser),
    )
