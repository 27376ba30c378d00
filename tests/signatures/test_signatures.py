"""Signatures: class, string and dict forms; manipulation; errors; state."""

from __future__ import annotations

import json
from enum import Enum
from typing import Literal, Optional

import pytest
from pydantic import BaseModel

import sigform as sf
from sigform.errors import SignatureError
from sigform.signatures import FieldSpec, make_signature


class Person(BaseModel):
    name: str
    age: int


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class QA(sf.Signature):
    """Answer with a short factoid."""

    question: str = sf.InputField(desc="the question")
    context: list[str] = sf.InputField()
    answer: str = sf.OutputField(desc="1-5 words")
    confidence: float = sf.OutputField(ge=0, le=1)


def test_class_signature_collects_fields_in_order():
    assert list(QA.input_fields) == ["question", "context"]
    assert list(QA.output_fields) == ["answer", "confidence"]
    assert list(QA.fields) == ["question", "context", "answer", "confidence"]
    assert QA.instructions == "Answer with a short factoid."
    assert QA.input_fields["question"].desc == "the question"
    assert QA.output_fields["confidence"].constraints == {"ge": 0, "le": 1}
    assert QA.input_fields["context"].annotation == list[str]


def test_fields_do_not_shadow_class_attributes():
    # the FieldDecl objects are removed from the class namespace
    assert not hasattr(QA, "question")


def test_constraints_are_enforced_by_validation_annotation():
    from pydantic import TypeAdapter, ValidationError

    adapter = TypeAdapter(QA.output_fields["confidence"].validation_annotation)
    assert adapter.validate_python(0.5) == 0.5
    with pytest.raises(ValidationError):
        adapter.validate_python(1.5)


def test_constraint_that_does_not_fit_type_is_a_definition_error():
    with pytest.raises(SignatureError, match="count"):

        class Bad(sf.Signature):
            text: str = sf.InputField()
            count: int = sf.OutputField(pattern="^a")


def test_unknown_field_option_is_an_error():
    with pytest.raises(SignatureError, match="unknown field option"):
        sf.OutputField(descr="typo")


def test_string_signature_types_and_defaults():
    sig = make_signature("question, context: list[str] -> answer: str, confidence: float")
    assert list(sig.input_fields) == ["question", "context"]
    assert sig.input_fields["question"].annotation is str
    assert sig.input_fields["context"].annotation == list[str]
    assert sig.output_fields["confidence"].annotation is float
    assert (
        sig.instructions
        == "Given the fields `question`, `context`, produce the fields `answer`, `confidence`."
    )


def test_string_signature_nested_generics_and_literals():
    sig = make_signature("a: dict[str, list[int]], b: Optional[int] -> c: Literal['x, y', 'z']")
    assert sig.input_fields["a"].annotation == dict[str, list[int]]
    assert sig.input_fields["b"].annotation == Optional[int]
    assert sig.output_fields["c"].annotation == Literal["x, y", "z"]


def test_string_signature_uses_explicit_types_mapping_only():
    sig = make_signature("text -> person: Person", types={"Person": Person})
    assert sig.output_fields["person"].annotation is Person
    # a module-level Person exists here, but the resolver must not look at the caller's frame
    with pytest.raises(SignatureError, match="Person"):
        make_signature("text -> person: Person")


def test_string_signature_knows_sigform_special_types():
    sig = make_signature("photo: Image, history: History -> caption")
    assert sig.input_fields["photo"].annotation is sf.Image
    assert sig.input_fields["history"].annotation is sf.History


@pytest.mark.parametrize(
    "text, match",
    [
        ("question answer", "exactly one '->'"),
        ("a -> b -> c", "exactly one '->'"),
        ("a, -> b", "empty field name"),
        ("a -> b: Nope", "Nope"),
        ("a -> ", "at least one output"),
        ("a, a -> b", "twice"),
        ("a -> a", "both an input and an output"),
        ("a -> b:", "no type"),
        ("a -> 1x", "not a valid field name"),
        ("a -> b: list[int", "unclosed"),
    ],
)
def test_string_signature_errors(text, match):
    with pytest.raises(SignatureError, match=match):
        make_signature(text)


def test_dict_and_string_forms_are_equal():
    from_dict = make_signature({"question": (str, sf.InputField()), "answer": (int, sf.OutputField())})
    from_str = make_signature("question -> answer: int")
    assert from_dict == from_str
    assert hash(from_dict) == hash(from_str)


def test_class_and_string_forms_are_equal_when_content_matches():
    class Simple(sf.Signature):
        question: str = sf.InputField()
        answer: int = sf.OutputField()

    assert Simple == make_signature("question -> answer: int")
    assert Simple != make_signature("question -> answer: float")
    assert Simple != make_signature("question -> answer: int", instructions="Be brief.")


def test_default_instructions_regenerate_when_fields_change():
    sig = make_signature("question -> answer")
    bigger = sig.append("confidence", sf.OutputField(), float)
    assert "`confidence`" in bigger.instructions
    assert "`confidence`" not in sig.instructions  # the original is unchanged


def test_explicit_instructions_are_kept_through_manipulation():
    bigger = QA.append("source", sf.OutputField(), str)
    assert bigger.instructions == "Answer with a short factoid."
    assert list(bigger.output_fields) == ["answer", "confidence", "source"]
    assert list(QA.output_fields) == ["answer", "confidence"]


def test_prepend_insert_delete_and_update():
    sig = make_signature("a, b -> c, d")
    assert list(sig.prepend("z", sf.InputField()).input_fields) == ["z", "a", "b"]
    assert list(sig.insert(1, "y", sf.OutputField(), int).output_fields) == ["c", "y", "d"]
    assert list(sig.insert(-1, "y", sf.OutputField()).output_fields) == ["c", "d", "y"]
    assert list(sig.delete("b").input_fields) == ["a"]
    with pytest.raises(SignatureError, match="no field `nope`"):
        sig.delete("nope")
    with pytest.raises(SignatureError, match="out of range"):
        sig.insert(5, "y", sf.OutputField())
    updated = sig.with_updated_field("c", desc="the c", annotation=int)
    assert updated.output_fields["c"].desc == "the c"
    assert updated.output_fields["c"].annotation is int
    assert sig.output_fields["c"].annotation is str


def test_with_instructions():
    sig = make_signature("a -> b").with_instructions("Do it.")
    assert sig.instructions == "Do it."
    with pytest.raises(SignatureError):
        sig.with_instructions("  ")


def test_deleting_last_output_is_an_error():
    with pytest.raises(SignatureError, match="at least one output"):
        make_signature("a -> b").delete("b")


@pytest.mark.parametrize(
    "name", ["instructions", "fields", "append", "_private", "model_config", "completed"]
)
def test_reserved_names_are_rejected(name):
    with pytest.raises(SignatureError, match=name):
        make_signature(f"x -> {name}")


def test_reserved_names_in_class_signatures_are_rejected_at_definition():
    with pytest.raises(SignatureError, match="reserved"):

        class Bad(sf.Signature):
            instructions: str = sf.InputField()
            out: str = sf.OutputField()


def test_annotation_without_field_declaration_is_an_error():
    with pytest.raises(SignatureError, match="annotated but not declared"):

        class Bad(sf.Signature):
            question: str
            answer: str = sf.OutputField()


def test_class_with_no_outputs_is_an_error():
    with pytest.raises(SignatureError, match="at least one output"):

        class Bad(sf.Signature):
            question: str = sf.InputField()


def test_inheritance_extends_fields():
    class More(QA):
        source: str = sf.OutputField()

    assert list(More.output_fields) == ["answer", "confidence", "source"]
    assert More.instructions == "Answer with a short factoid."


def test_signature_string_form():
    assert make_signature("q, n: int -> a: list[str]").signature == "q, n: int -> a: list[str]"


def test_dump_state_is_json_and_round_trips_by_name():
    state = QA.dump_state()
    text = json.dumps(state)
    loaded = QA.load_state(json.loads(text))
    assert loaded == QA
    # descriptions and instructions come from the state, matched by name even if reordered
    state["fields"] = list(reversed(state["fields"]))
    state["fields"][0]["desc"] = "new desc for confidence"
    state["instructions"] = "New instructions."
    loaded = QA.load_state(state)
    assert loaded.output_fields["confidence"].desc == "new desc for confidence"
    assert list(loaded.fields) == list(QA.fields)  # order stays the signature's
    assert loaded.instructions == "New instructions."


def test_load_state_mismatch_is_a_clear_error():
    state = QA.dump_state()
    state["fields"][0]["name"] = "query"
    with pytest.raises(SignatureError, match="by field name"):
        QA.load_state(state)
    state = QA.dump_state()
    state["fields"][3]["type"] = "int"
    with pytest.raises(SignatureError, match="confidence"):
        QA.load_state(state)


def test_signature_from_state_rebuilds_types():
    from sigform.signatures import signature_from_state

    sig = make_signature("text -> person: Person, color: Color", types={"Person": Person, "Color": Color})
    rebuilt = signature_from_state(sig.dump_state(), types={"Person": Person, "Color": Color})
    assert rebuilt == sig


def test_fieldspec_equality_and_repr():
    a = FieldSpec("x", "output", int, "d", {"ge": 0})
    b = FieldSpec("x", "output", int, "d", {"ge": 0})
    assert a == b and hash(a) == hash(b)
    assert a != a.replace(desc="other")
    assert "ge=0" in repr(a)


def test_a_signature_instance_holds_the_inputs_of_one_call():
    inputs = QA(question="2+2?")
    assert isinstance(inputs, sf.Prediction) and inputs.to_dict() == {"question": "2+2?"}
    with pytest.raises(sf.InputError, match="`answer` is an output"):
        QA(question="?", answer="4")
    with pytest.raises(sf.InputError, match="did you mean `question`"):
        QA(questoin="?")
    with pytest.raises(TypeError, match="base class"):
        sf.Signature()
