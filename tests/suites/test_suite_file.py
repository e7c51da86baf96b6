"""Reading a scenarios file: every malformed file is a SuiteFileError naming its line and the
fix, in bounded time and memory (issue 32, item 7); a key's mistake is on the key's own line;
scenario ids are kept and can be added without changing anything else in the file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from notebook_agents.suites import SuiteFileError, add_missing_ids, load_suite

ONE_TURN = "scenarios:\n  - label: a\n    turns:\n      - user: hi\n"
LIVEKIT_ID = r"[23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz]{12}"
"""livekit's ids: a prefix, then 12 characters of shortuuid's alphabet (livekit/protocol
utils/guid: ``Size = 12``, ``IDAlphabet = shortuuid.DefaultAlphabet``)"""


def refusal(tmp_path: Path, text: str | bytes) -> str:
    """The SuiteFileError's message for a file of ``text``, which starts with the file's path."""
    path = tmp_path / "scenarios.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(SuiteFileError) as raised:
        load_suite(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:")
    return message[len(str(path)) :]


def alias_bomb(levels: int, size: int = 0) -> str:
    """A "billion laughs" scenarios file: each level's list holds nine aliases of the one
    before, so ``levels`` levels expand to 9**levels scalars; padded with a comment to ``size``
    bytes."""
    lines = [
        "scenarios:",
        "  - label: laughs",
        "    userdata:",
        "      l0: &l0 [" + ",".join(["lol"] * 9) + "]",
        *(f"      l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)),
    ]
    text = "\n".join(lines) + "\n"
    if size:
        assert len(text) + 3 <= size, "the bomb is larger than the size asked"
        text += "#" + "-" * (size - len(text) - 2) + "\n"
    return text


# ------------------------------------------------------------------- malformed files


def test_a_file_that_is_not_utf8_names_its_line_and_says_save_it_as_utf8(
    tmp_path: Path,
) -> None:
    text = "name: Caf\xe9 suite\nscenarios:\n  - label: caf\xe9\n".encode("latin-1")
    assert refusal(tmp_path, text) == (
        ":1: not UTF-8 text (the byte 0xe9 at column 10): save the file as UTF-8"
    )


def test_a_character_yaml_does_not_allow_names_its_line(tmp_path: Path) -> None:
    message = refusal(tmp_path, "scenarios:\n  - label: a\x00b\n")
    assert message == ":2: the character U+0000 is not allowed in YAML: remove it"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # flow lists 3000 deep: PyYAML's composer recursed out of the stack (RecursionError)
        ("scenarios:\n  - label: a\n    userdata:\n      a: " + "[" * 3000 + "]" * 3000, 4),
        # block mappings 70 deep, each key on its own line
        (
            "scenarios:\n  - label: a\n    userdata:\n"
            + "".join(f"{'  ' * (3 + depth)}k{depth}:\n" for depth in range(70))
            + "  " * 73
            + "leaf\n",
            65,
        ),
    ],
)
def test_nesting_deeper_than_the_bound_is_refused_at_its_line(
    tmp_path: Path, text: str, line: int
) -> None:
    assert refusal(tmp_path, text) == (
        f":{line}: nested more than 64 levels deep: a scenarios file needs a few (userdata "
        "may nest, not this far); flatten it"
    )


def test_nesting_within_the_bound_is_read(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(ONE_TURN + "    userdata:\n      a: " + "[" * 55 + "1" + "]" * 55 + "\n")
    userdata = json.loads(load_suite(path).scenarios[0].scenario.userdata)
    depth = 0
    value = userdata["a"]
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    assert (depth, value) == (55, 1)


@pytest.mark.parametrize(
    ("bomb", "size"),
    [
        (alias_bomb(5), 303),  # 59049 scalars: read in full before
        (alias_bomb(9, size=530), 530),  # 387 million scalars
        (alias_bomb(11, size=650), 650),  # 31 billion
    ],
)
def test_aliases_expanding_past_the_budget_are_refused_at_the_alias(
    tmp_path: Path, bomb: str, size: int
) -> None:
    assert len(bomb.encode()) == size
    assert refusal(tmp_path, bomb) == (
        ":8: the alias *l3 would repeat more than 10000 nodes or 1000000 characters "
        "of the file in all: aliases may share a little (one userdata for several scenarios), "
        "not multiply the file; write the values out"
    )


def test_an_alias_repeating_a_long_text_past_the_budget_is_refused(tmp_path: Path) -> None:
    text = (
        "scenarios:\n  - label: a\n    instructions: &long "
        + "x" * 200_000
        + "\n"
        + "".join(f"  - label: b{i}\n    instructions: *long\n" for i in range(6))
    )
    assert refusal(tmp_path, text).startswith(
        ":15: the alias *long would repeat more than 10000 nodes or 1000000 characters"
    )


def test_an_alias_inside_the_anchor_it_names_is_refused(tmp_path: Path) -> None:
    text = "scenarios:\n  - label: a\n    userdata: &u\n      me: *u\n"
    assert refusal(tmp_path, text) == (
        ":4: the alias *u is inside the anchor &u it names (a value that holds itself): "
        "write the value out"
    )


def test_aliases_sharing_a_little_are_read_as_yaml_means(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "scenarios:\n"
        "  - label: a\n"
        "    userdata: &guest {name: Ada, city: Paris}\n"
        "    turns:\n"
        "      - user: hi\n"
        "        expect: &greeted ['next_event().is_message(role=\"assistant\")']\n"
        "  - label: b\n"
        "    userdata:\n"
        "      <<: *guest\n"
        "      city: Rome\n"
        "    turns:\n"
        "      - user: hello\n"
        "        expect: *greeted\n"
    )
    suite = load_suite(path)
    assert json.loads(suite["a"].scenario.userdata) == {"name": "Ada", "city": "Paris"}
    assert json.loads(suite["b"].scenario.userdata) == {"name": "Ada", "city": "Rome"}
    assert [str(e) for e in suite["b"].expectations] == [str(e) for e in suite["a"].expectations]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: x\nscenarios:\n  - label: a\nname: y\n",
            ":4: the key `name` is given twice in one mapping (first on line 1): YAML would "
            "keep only the last; remove one",
        ),
        (
            "scenarios:\n  - label: a\n    label: b\n",
            ":3: the key `label` is given twice in one mapping (first on line 2)",
        ),
        (
            ONE_TURN + "        timeout: 5\n        timeout: 9\n",
            ":6: the key `timeout` is given twice in one mapping (first on line 5)",
        ),
        (
            "scenarios:\n  - label: a\n    userdata: {guest: {name: Ada, 'name': Bob}}\n",
            ":3: the key `name` is given twice in one mapping (first on line 3)",
        ),
    ],
)
def test_a_key_given_twice_at_any_level_is_refused(tmp_path: Path, text: str, message: str) -> None:
    assert refusal(tmp_path, text).startswith(message)


@pytest.mark.parametrize("value", [".nan", ".inf", ".Inf", "1.0e+400"])
def test_a_timeout_that_is_not_a_finite_number_is_refused(tmp_path: Path, value: str) -> None:
    assert refusal(tmp_path, ONE_TURN + f"        timeout: {value}\n") == (
        ":5: scenarios[0].turns[0].timeout: `timeout:` is seconds, a positive number"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            ".nan",
            "scenarios[0].userdata.guest.score: .nan is not a number JSON can carry (livekit "
            "sends userdata as JSON): give a finite number, or quote it as text",
        ),
        (
            "-.inf",
            "scenarios[0].userdata.guest.score: -.inf is not a number JSON can carry",
        ),
        (
            "2026-06-09",
            "scenarios[0].userdata.guest.score: YAML reads 2026-06-09 as a date, which JSON "
            "(livekit's userdata) cannot carry: quote it, '2026-06-09'",
        ),
        (
            "!!binary aGk=",
            "scenarios[0].userdata.guest.score: YAML reads this as bytes (a YAML tag), which "
            "JSON (livekit's userdata) cannot carry: write it as text, a number, a list or a "
            "mapping",
        ),
    ],
)
def test_userdata_json_cannot_carry_names_its_line(
    tmp_path: Path, value: str, message: str
) -> None:
    text = f"scenarios:\n  - label: a\n    userdata:\n      guest:\n        score: {value}\n"
    assert refusal(tmp_path, text).startswith(f":5: {message}")


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "5.0", ".nan", ".inf", "true", "five", "101"])
def test_a_repeat_that_is_no_count_of_runs_is_refused_at_its_line(
    tmp_path: Path, value: str
) -> None:
    text = f"scenarios:\n  - label: a\n    repeat: {value}\n    turns:\n      - user: hi\n"
    assert re.fullmatch(
        r":3: scenarios\[0\]\.repeat: `repeat:` is how many times to run the scenario, a whole "
        r"number from 1 to 100 \(e\.g\. 5\), not .+",
        refusal(tmp_path, text),
    )


def test_repeat_is_read_per_scenario_once_by_default(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(ONE_TURN + "  - label: b\n    repeat: 5\n    turns:\n      - user: hi\n")
    assert [s.repeat for s in load_suite(path).scenarios] == [1, 5]


# ----------------------------------------------------------------- lines of mistakes


def test_a_misspelt_key_is_reported_on_its_own_line(tmp_path: Path) -> None:
    text = ONE_TURN + "        expct:\n          - no_more_events()\n"
    assert refusal(tmp_path, text) == (
        ":5: scenarios[0].turns[0].expct: unknown field `expct`: the fields are at, audio, "
        "conditions, expect, timeout, user"
    )


# ------------------------------------------------------------------------ scenario ids

WITHOUT_IDS = """\
# the front desk's suite
name: Front desk

scenarios:
  # books a room
  - label: books a room
    tags: {feature: booking}   # a comment after a value
    turns:
      - user: book a room
  - {label: inline, instructions: You are a caller.}
"""


def test_a_file_with_ids_keeps_them_on_the_suite_and_each_scenario(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(
        "id: SCNG_9nF2kQwPbXtR\nname: Rooms\nscenarios:\n"
        "  - id: SCN_4mTvH7yLdKpZ\n    label: book\n  - label: cancel\n"
    )
    suite = load_suite(path)
    assert suite.id == "SCNG_9nF2kQwPbXtR"
    assert [s.id for s in suite.scenarios] == ["SCN_4mTvH7yLdKpZ", ""]
    assert suite["book"].scenario.id == "SCN_4mTvH7yLdKpZ"  # what livekit's simulation gets


def test_adding_ids_changes_nothing_else_and_loading_again_gives_the_same_ids(
    tmp_path: Path,
) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(WITHOUT_IDS)
    suite = add_missing_ids(path)

    assert re.fullmatch(f"SCNG_{LIVEKIT_ID}", suite.id)
    ids = [s.id for s in suite.scenarios]
    assert all(re.fullmatch(f"SCN_{LIVEKIT_ID}", i) for i in ids) and len(set(ids)) == 2
    written = path.read_text()
    assert written == (
        "# the front desk's suite\n"
        f"id: {suite.id}\n"
        "name: Front desk\n"
        "\n"
        "scenarios:\n"
        "  # books a room\n"
        f"  - id: {ids[0]}\n"
        "    label: books a room\n"
        "    tags: {feature: booking}   # a comment after a value\n"
        "    turns:\n"
        "      - user: book a room\n"
        f"  - {{id: {ids[1]}, label: inline, instructions: You are a caller.}}\n"
    )
    again = load_suite(path)
    assert (again.id, [s.id for s in again.scenarios]) == (suite.id, ids)
    add_missing_ids(path)
    assert path.read_text() == written  # nothing missing: nothing changes


def test_a_file_with_every_id_is_left_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    content = (
        "\ufeffid: SCNG_9nF2kQwPbXtR\r\nname: Rooms\r\nscenarios:\r\n"
        "- id: SCN_4mTvH7yLdKpZ\r\n  label: book   # livekit's own indentation\r\n"
    ).encode()
    path.write_bytes(content)
    before = path.stat().st_mtime_ns
    suite = add_missing_ids(path)
    assert path.read_bytes() == content and path.stat().st_mtime_ns == before
    assert [s.id for s in suite.scenarios] == ["SCN_4mTvH7yLdKpZ"]


def test_ids_are_added_in_the_files_own_indentation_and_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_bytes(
        b"id: SCNG_9nF2kQwPbXtR\r\nscenarios:\r\n- label: book\r\n  tags: {a: b}\r\n"
        b"- id: ''\r\n  label: cancel\r\n- &shared\r\n  <<: {tags: {a: b}}\r\n"
        b"  label: move\r\n"
    )
    suite = add_missing_ids(path)
    book, cancel, move = (s.id for s in suite.scenarios)
    assert (
        path.read_bytes()
        == (
            f"id: SCNG_9nF2kQwPbXtR\r\nscenarios:\r\n- id: {book}\r\n  label: book\r\n"
            f"  tags: {{a: b}}\r\n- id: {cancel}\r\n  label: cancel\r\n- &shared\r\n"
            f"  id: {move}\r\n  <<: {{tags: {{a: b}}}}\r\n  label: move\r\n"
        ).encode()
    )
    assert suite.id == "SCNG_9nF2kQwPbXtR"


def test_a_file_that_cannot_be_read_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n  - label: a\n  - labl: b\n")
    with pytest.raises(SuiteFileError, match=r":3: scenarios\[1\]\.labl: unknown field"):
        add_missing_ids(path)
    assert path.read_text() == "scenarios:\n  - label: a\n  - labl: b\n"


def test_ids_that_would_change_anything_else_are_not_written(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    text = "scenarios:\n  - label: a\n    userdata: {copy: &b {label: b}}\n  - *b\n"
    path.write_text(text)  # the second scenario is the first's userdata: an id changes both
    with pytest.raises(SuiteFileError) as raised:
        add_missing_ids(path)
    assert str(raised.value) == (
        f"{path}: adding ids here would change more than ids (a scenario written as an alias "
        "of another value, say): add a line `id: SCN_` and 12 letters and digits to each "
        "scenario by hand; the file is unchanged"
    )
    assert path.read_text() == text


def test_an_id_used_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    text = (
        "scenarios:\n  - id: SCN_4mTvH7yLdKpZ\n    label: a\n"
        "  - id: SCN_4mTvH7yLdKpZ\n    label: b\n"
    )
    assert refusal(tmp_path, text) == (
        ":4: scenarios[1].id: the id 'SCN_4mTvH7yLdKpZ' is also scenarios[0]'s (line 2): "
        "ids name a scenario's results across runs, so make each one different (delete this "
        "one and add_missing_ids() gives it a new id)"
    )
