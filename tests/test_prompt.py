from taguru_ray.pipeline.prompt import Conversation, replay_of, system_prompt, user_turn
from taguru_ray.pipeline.steer import LabelUse, Steering


def test_user_turn_names_the_input_path_and_the_part() -> None:
    assert user_turn("docs/a.md", 1, 3, "[4] x") == "Segment 'docs/a.md', part 2 of 3:\n\n[4] x"
    assert user_turn("docs/a.md", 0, 1, "[0] x") == "Segment 'docs/a.md':\n\n[0] x"


def test_system_prompt_offers_the_vocabulary_only_when_there_is_one() -> None:
    plain = system_prompt(Steering())
    steered = system_prompt(Steering((LabelUse("uses", 2), LabelUse("part of", 1))))
    assert "- uses (×2)\n- part of" in steered
    assert "(×" not in plain
    assert steered.startswith(plain)


def test_questions_and_the_fact_budget_change_the_rules_and_the_answer_shape() -> None:
    plain = system_prompt(Steering())
    asked = system_prompt(Steering(questions=3, fact_budget=12))
    assert "up to 3 retrieval question(s) per paragraph" in asked
    assert "at most 12 associations" in asked
    assert '"questions": [{"paragraph": 0, "question": "…"}]' in asked
    assert '"questions"' not in plain and "retrieval question" not in plain


def test_optional_blocks_follow_the_vocabulary_in_order() -> None:
    text = system_prompt(Steering((LabelUse("uses", 1),), blocks=("BLOCK A", "", "BLOCK B")))
    assert text.index("- uses") < text.index("BLOCK A") < text.index("BLOCK B")


def test_corrective_conversation_replays_only_the_latest_answer() -> None:
    conversation = Conversation("sys", "user")
    messages = conversation.corrective("bad", "fix it", None)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "bad"


def test_replay_cap_truncates_or_omits_the_bad_answer() -> None:
    assert replay_of("abcdef", None) == "abcdef"
    assert replay_of("abcdef", 3).startswith("abc\n") and "truncated to 3 bytes" in replay_of(
        "abcdef", 3
    )
    assert "abc" not in replay_of("abcdef", 0)
    assert replay_of("日本", 4).startswith("日\n")  # never a broken character
