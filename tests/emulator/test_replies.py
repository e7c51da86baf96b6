"""The emulator's deterministic reply rules, without any server."""

from __future__ import annotations

import enum
import json
import re
from typing import Annotated, Any, Literal

import pytest
from livekit.agents.llm import function_tool
from livekit.agents.llm.utils import (
    build_legacy_openai_schema,
    build_strict_openai_schema,
    validated_arguments,
)
from pydantic import Field, ValidationError

from notebook_agents.emulator import (
    ReplyContext,
    ReplyRules,
    TextReply,
    ToolCallReply,
    ToolSpec,
    Turn,
    VerdictReply,
)
from notebook_agents.emulator.replies import first_sentence, tool_arguments
from notebook_agents.speech.grammar import Grammar, grammar
from notebook_agents.speech.tokens import tokens

WEATHER = ToolSpec(
    "get_weather",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
)

REFILL = ToolSpec(
    "refill",
    {
        "properties": {"medication": {"type": "string"}, "quantity": {"type": "integer"}},
        "required": ["medication", "quantity"],
    },
)


def reply(user: str | None, *, instructions: str = "", tools: list[ToolSpec] | None = None) -> Any:
    history = [Turn("user", user)] if user is not None else []
    return ReplyRules().reply(ReplyContext(instructions, history, tools or []))


# --------------------------------------------------------------------------------- tools


@pytest.mark.parametrize(
    "text",
    ["Please call get_weather", "GET_WEATHER now", "can you get weather for me?"],
)
def test_tool_named_by_name_or_spaced_words(text: str) -> None:
    # the required city is not given: left out, not made up
    assert reply(text, tools=[WEATHER]) == ToolCallReply("get_weather", {})


def test_tool_not_named_is_not_called() -> None:
    assert isinstance(reply("what's the weather?", tools=[WEATHER]), TextReply)


def test_tool_name_must_be_whole_words() -> None:
    add = ToolSpec("add")
    assert isinstance(reply("my address is 5 Elm St", tools=[add]), TextReply)
    assert reply("add it", tools=[add]) == ToolCallReply("add", {})


def test_first_named_tool_wins_and_longest_name_at_a_tie() -> None:
    tools = [ToolSpec("get"), ToolSpec("get_time"), WEATHER]
    assert reply("get_weather, then get_time", tools=tools).name == "get_weather"
    assert reply("get time please", tools=tools).name == "get_time"


BILLING = ToolSpec("transfer_to_billing", description="Transfer the caller to billing.")
HOURS = ToolSpec("opening_hours", description="Tell the caller when the clinic is open.")


@pytest.mark.parametrize(
    ("text", "tool"),
    [
        ("Please transfer me to billing", "transfer_to_billing"),
        ("Could you put me through to Billing?", "transfer_to_billing"),
        ("billing, transfer please", "transfer_to_billing"),
        ("What are your opening hours?", "opening_hours"),
    ],
)
def test_a_natural_request_calls_the_tool_its_words_name(text: str, tool: str) -> None:
    assert reply(text, tools=[HOURS, BILLING]) == ToolCallReply(tool, {})


def test_a_request_naming_only_part_of_a_tool_calls_nothing() -> None:
    assert isinstance(reply("Is billing open?", tools=[HOURS, BILLING]), TextReply)


def test_the_description_picks_among_tools_the_words_name() -> None:
    tools = [
        ToolSpec("transfer_call", description="Transfer the call to billing."),
        ToolSpec("route_call", description="Route the call to the front desk."),
    ]
    assert reply("Send my call to billing", tools=tools).name == "transfer_call"
    assert reply("Put my call through to the front desk", tools=tools).name == "route_call"


def test_no_tool_call_unless_the_user_spoke_last() -> None:
    history = [Turn("user", "get_weather"), Turn("tool_call", "{}", name="get_weather")]
    result = ReplyRules().reply(ReplyContext("", history, [WEATHER]))
    assert isinstance(result, TextReply)


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        ("get_weather city=Paris days=3", {"city": "Paris", "days": 3}),
        ("get_weather city: Oslo, days: 2.0", {"city": "Oslo", "days": 2}),
        ('get_weather city="New York"', {"city": "New York"}),
        ("get_weather city='Rio de Janeiro'", {"city": "Rio de Janeiro"}),
        ("Is it warm? get_weather city=Paris?", {"city": "Paris"}),
        ("get_weather city=Paris days=three", {"city": "Paris", "days": 3}),
        ("get_weather city=Paris days=Twenty", {"city": "Paris", "days": 20}),
        # what the text does not fill is left out, never made up: "many" is no number
        ("get_weather city=Paris days=many", {"city": "Paris"}),
        ("get_weather city=Paris days=2.5", {"city": "Paris"}),  # no integer either
        ("get_weather days=3", {"days": 3}),  # the required city is not given
        ("get_weather", {}),
    ],
)
def test_tool_arguments_from_text(text: str, arguments: dict[str, Any]) -> None:
    assert tool_arguments(WEATHER, text) == arguments


def test_required_arguments_not_given_are_only_what_the_schema_says() -> None:
    properties = {
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "on": {"type": "boolean"},
        "tags": {"type": "array"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "note": {"type": ["string", "null"]},  # strict schemas: optional -> nullable
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "level": {"type": "integer", "default": 3},
    }
    tool = ToolSpec("t", {"properties": properties, "required": list(properties)})
    # null for the nullable (a strict schema's optional ones), the schema's own default;
    # nothing for the others (no 0, False, [] or first enum member made up)
    assert tool_arguments(tool, "") == {"note": None, "maybe": None, "level": 3}


def test_tool_argument_coercion() -> None:
    properties = {"n": {"type": "number"}, "flag": {"type": "boolean"}, "k": {"type": "integer"}}
    tool = ToolSpec("t", {"properties": properties})
    assert tool_arguments(tool, "n=2.5 flag=yes k=7") == {"n": 2.5, "flag": True, "k": 7}


class Seating(str, enum.Enum):
    INDOOR = "indoor"
    OUTDOOR = "outdoor"


class Size(int, enum.Enum):
    SMALL = 1
    LARGE = 3


@function_tool
async def update_order(
    items: Annotated[list[str], Field(description="The items of the full order")],
) -> str:
    """Called when the user creates or updates their order (upstream's restaurant agent)."""
    return f"The order is updated to {items}"


@function_tool
async def book_table(
    guests: int,
    deposit: float,
    high_chair: bool,
    seating: Seating,
    size: Size,
    when: Literal["lunch", "dinner"],
    courses: list[int],
    note: str | None = None,
) -> str:
    """Book a table."""
    return "booked"


SCHEMA_BUILDERS = {"strict": build_strict_openai_schema, "legacy": build_legacy_openai_schema}


def livekit_spec(tool: Any, builder: str) -> ToolSpec:
    """The tool as a plugin offers it: livekit's own JSON schema (strict or legacy)."""
    function = SCHEMA_BUILDERS[builder](tool)["function"]
    return ToolSpec(function["name"], function["parameters"])


@pytest.mark.parametrize("builder", SCHEMA_BUILDERS)
@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("update order items=Pizza", ["Pizza"]),
        ("update order items=Pizza,Salad", ["Pizza", "Salad"]),
        ('update order items="Pizza, Ice Cream"', ["Pizza", "Ice Cream"]),
        ("update order items=[Pizza, Ice Cream]", ["Pizza", "Ice Cream"]),
        ('update order items=["Pizza", "Coffee"]', ["Pizza", "Coffee"]),
    ],
)
def test_a_list_parameter_is_a_list(builder: str, text: str, items: list[str]) -> None:
    arguments = tool_arguments(livekit_spec(update_order, builder), text)
    assert arguments == {"items": items}
    assert validated_arguments(update_order, arguments) == {"items": items}


@pytest.mark.parametrize("builder", SCHEMA_BUILDERS)
def test_arguments_are_typed_by_the_schema(builder: str) -> None:
    text = (
        "book table guests=4 deposit=12.5 high_chair=yes seating=Outdoor size=3 when=DINNER "
        "courses=1,2 note=window"
    )
    arguments = tool_arguments(livekit_spec(book_table, builder), text)
    # typed in the JSON itself, as a model constrained by the schema sends them
    assert json.loads(json.dumps(arguments)) == {
        "guests": 4,
        "deposit": 12.5,
        "high_chair": True,
        "seating": "outdoor",
        "size": 3,
        "when": "dinner",
        "courses": [1, 2],
        "note": "window",
    }
    assert validated_arguments(book_table, arguments)["seating"] is Seating.OUTDOOR


@pytest.mark.parametrize("builder", SCHEMA_BUILDERS)
def test_required_parameters_not_given_are_named_by_livekits_validation(builder: str) -> None:
    arguments = tool_arguments(livekit_spec(book_table, builder), "book table guests=two")
    with pytest.raises(ValidationError) as refused:
        validated_arguments(book_table, arguments)
    # what a model's call lacking them gets back: livekit's ToolError names each one
    assert {error["loc"][0] for error in refused.value.errors()} == {
        "deposit",
        "high_chair",
        "seating",
        "size",
        "when",
        "courses",
    }


@pytest.mark.parametrize(
    "text",
    [
        "book table guests=1e400 deposit=inf high_chair=maybe seating=patio size=2 when=brunch "
        "courses=x,2",
        "book table guests=nan deposit=-1e999 high_chair=sometimes seating=roof size=huge "
        "when=never courses=[1,lots]",
    ],
)
def test_values_that_do_not_fit_are_left_out(text: str) -> None:
    arguments = tool_arguments(livekit_spec(book_table, "strict"), text)
    assert arguments == {"note": None}  # the strict schema's nullable one: null, "not given"


def test_every_number_word_a_caller_says_is_read_alike_when_typed() -> None:
    """A spoken number reaches the rules as digits (the grammar's transcript); typed as a
    word it fills the same argument with the same number."""
    jsgf = grammar([], lambda words: ["X"]).jsgf
    said = re.search(r"^<number> = (.*);$", jsgf, re.MULTILINE)
    assert said is not None
    heard = Grammar(jsgf)
    for word in said.group(1).split(" | "):
        spoken = tool_arguments(REFILL, f"refill quantity: {heard.transcript(word)}")
        typed = tool_arguments(REFILL, f"refill quantity={word}")
        assert typed == spoken == {"quantity": int(heard.transcript(word))}, word
    assert tool_arguments(REFILL, "refill quantity=Five") == {"quantity": 5}


@pytest.mark.parametrize(
    ("text", "value"),
    [("size=three", Size.LARGE), ("size=3", Size.LARGE), ("size=One", Size.SMALL)],
)
def test_a_numeric_enum_member_is_named_by_a_number_word_too(text: str, value: Size) -> None:
    arguments = tool_arguments(livekit_spec(book_table, "strict"), f"book table {text}")
    assert arguments["size"] == value.value


def test_nullable_parameter_takes_null() -> None:
    arguments = tool_arguments(livekit_spec(book_table, "strict"), "book table note=null")
    assert arguments["note"] is None


def test_tool_call_arguments_json_is_compact() -> None:
    assert ToolCallReply("f", {"a": 1, "b": "x"}).arguments_json == '{"a":1,"b":"x"}'


# ---------------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("what is 2 + 3 * 4", "2 + 3 * 4 = 14."),
        ("What is 2 plus 3 times 4?", "2 + 3 * 4 = 14."),
        ("10 divided by 4", "10 / 4 = 2.5."),
        ("7 minus 10", "7 - 10 = -3."),
        ("6 multiplied by 7", "6 * 7 = 42."),
        ("(2 + 3) * 4", "(2 + 3) * 4 = 20."),
        ("2 ^ 10", "2 ^ 10 = 1024."),
        ("0.1 + 0.2", "0.1 + 0.2 = 0.3."),
    ],
)
def test_arithmetic(text: str, answer: str) -> None:
    assert reply(text) == TextReply(answer)


@pytest.mark.parametrize("text", ["what is 1 / 0", "2 ** 999", "I have 3 cats"])
def test_not_arithmetic_falls_back_to_echo(text: str) -> None:
    assert reply(text) == TextReply(f'You said: "{text}".')


# ------------------------------------------------------------------- echo and greeting


def test_echo_collapses_whitespace() -> None:
    assert reply("  hello \n there ") == TextReply('You said: "hello there".')


def test_greeting_when_nobody_spoke() -> None:
    assert reply(None) == TextReply("How can I help you?")
    assistant_only = ReplyContext("", [Turn("assistant", "Hi!")])
    assert ReplyRules().reply(assistant_only) == TextReply("How can I help you?")


# ------------------------------------------------------------------------ instructions


@pytest.mark.parametrize(
    ("instructions", "sentence"),
    [
        ("You are Bob. Be terse.", "You are Bob."),
        ("  You are\n Ann!  Smile.", "You are Ann!"),
        ("Who am I? Nobody.", "Who am I?"),
        ("No punctuation here", "No punctuation here"),
        ("version 1.5 is out. Yes.", "version 1.5 is out."),
        ("", ""),
    ],
)
def test_first_sentence(instructions: str, sentence: str) -> None:
    assert first_sentence(instructions) == sentence


def test_text_replies_start_with_the_instructions_first_sentence() -> None:
    assert reply("hi", instructions="You are Bob. Be terse.") == TextReply(
        'You are Bob. You said: "hi".'
    )
    assert reply("hi", instructions="") == TextReply('You said: "hi".')


def test_tool_calls_carry_no_prefix() -> None:
    result = reply("get_weather", instructions="You are Bob.", tools=[WEATHER])
    assert isinstance(result, ToolCallReply)


# --------------------------------------------------------------------------- tool output


def test_tool_output_is_reported() -> None:
    history = [
        Turn("user", "get_weather"),
        Turn("tool_call", '{"city":"Paris"}', name="get_weather"),
        Turn("tool_output", "Sunny", name="get_weather"),
    ]
    ctx = ReplyContext("You are Bob.", history, [WEATHER])
    assert ReplyRules().reply(ctx) == TextReply("You are Bob. The tool returned: Sunny")


REFUSED = "Error parsing arguments for `refill`: ... Field required"


@pytest.mark.parametrize(
    ("calls", "answer"),
    [
        (['{"medication":"aspirin"}'], "I need the quantity for refill: what is it?"),
        (["{}"], "I need the medication and quantity for refill: what are they?"),
        (
            ['{"medication":"aspirin"}', '{"quantity":2}'],  # parallel calls, one batch
            "I need the quantity and medication for refill: what are they?",
        ),
    ],
)
def test_a_call_lacking_a_required_argument_is_answered_by_asking_for_it(
    calls: list[str], answer: str
) -> None:
    history = [
        Turn("user", "refill quantity=lots"),
        *(Turn("tool_call", arguments, name="refill") for arguments in calls),
        *(Turn("tool_output", REFUSED, name="refill") for _ in calls),
    ]
    assert ReplyRules().reply(ReplyContext("", history, [REFILL])) == TextReply(answer)


def test_an_earlier_call_lacking_an_argument_does_not_colour_a_later_output() -> None:
    history = [
        Turn("user", "refill"),
        Turn("tool_call", "{}", name="refill"),
        Turn("tool_output", REFUSED, name="refill"),
        Turn("assistant", "I need the medication and quantity for refill: what are they?"),
        Turn("user", "refill medication=aspirin quantity=2"),
        Turn("tool_call", '{"medication":"aspirin","quantity":2}', name="refill"),
        Turn("tool_output", "ordered", name="refill"),
    ]
    reply = ReplyRules().reply(ReplyContext("", history, [REFILL]))
    assert reply == TextReply("The tool returned: ordered")


def test_empty_tool_output_says_done() -> None:
    ctx = ReplyContext("", [Turn("tool_output", "")])
    assert ReplyRules().reply(ctx) == TextReply("Done.")


# -------------------------------------------------------------------------- custom rules


def test_custom_rule_precedes_the_defaults() -> None:
    rules = ReplyRules()

    @rules.add
    def shout(ctx: ReplyContext) -> TextReply | None:
        text = ctx.user_text
        return TextReply(text.upper()) if text and text.startswith("!") else None

    ctx = ReplyContext("You are Bob.", [Turn("user", "!what is 1 + 1")], [])
    assert rules.reply(ctx) == TextReply("You are Bob. !WHAT IS 1 + 1")
    # a rule that declines (None) hands over to the defaults
    assert rules.reply(ReplyContext("", [Turn("user", "1 + 1")])) == TextReply("1 + 1 = 2.")


def test_a_rule_removed_no_longer_answers_and_clear_leaves_the_defaults() -> None:
    def paris(ctx: ReplyContext) -> TextReply:
        return TextReply("Paris.")

    def rome(ctx: ReplyContext) -> TextReply:
        return TextReply("Rome.")

    rules = ReplyRules([paris])
    rules.add(rome)
    ctx = ReplyContext("", [Turn("user", "1 + 1")])
    assert rules.reply(ctx) == TextReply("Paris.")
    rules.remove(paris)
    assert rules.reply(ctx) == TextReply("Rome.")
    with pytest.raises(ValueError) as raised:
        rules.remove(paris)
    assert str(raised.value) == (
        "the rule paris is not among the rules added (rome); the default rules cannot be "
        "removed, only preceded"
    )
    rules.clear()
    assert rules.reply(ctx) == TextReply("1 + 1 = 2.")


def test_rules_given_to_the_constructor_run_in_order() -> None:
    def first(ctx: ReplyContext) -> ToolCallReply:
        return ToolCallReply("first", {})

    def second(ctx: ReplyContext) -> ToolCallReply:
        return ToolCallReply("second", {})

    rules = ReplyRules([first, second])
    assert rules.reply(ReplyContext("", [])) == ToolCallReply("first", {})


# ------------------------------------------------------------------------------ verdicts
# (livekit's judges against the real plugin: test_emulator_judges.py, test_judges.py)


def test_a_verdict_is_only_for_a_judge() -> None:
    def always_pass(ctx: ReplyContext) -> VerdictReply:
        return VerdictReply("pass")

    with pytest.raises(TypeError, match=r"rule always_pass returned a VerdictReply .* judge's"):
        ReplyRules([always_pass]).reply(ReplyContext("", [Turn("user", "hi")]))


def test_a_verdict_is_pass_fail_or_maybe() -> None:
    with pytest.raises(ValueError, match="'yes'; use 'pass', 'fail' or 'maybe'"):
        VerdictReply("yes")  # type: ignore[arg-type]


def test_a_tool_named_like_a_judges_with_other_parameters_is_no_judge() -> None:
    check = ToolSpec("check_intent", {"type": "object", "properties": {"text": {}}})
    ctx = ReplyContext("", [Turn("user", "check_intent text=hi")], [check])
    assert ctx.judgment is None
    assert ReplyRules().reply(ctx) == ToolCallReply("check_intent", {"text": "hi"})


# -------------------------------------------------------------------------------- tokens


@pytest.mark.parametrize("text", ["You are Bob. Hi there!", "one", "a  b\nc ", ""])
def test_tokens_rebuild_the_text(text: str) -> None:
    parts = tokens(text)
    assert "".join(parts) == text.lstrip()
    assert parts


def test_tokens_are_words_with_their_trailing_space() -> None:
    assert tokens("You are  Bob.") == ["You ", "are  ", "Bob."]
