"""Sampling per role: the original system's defaults, and the agent spec's ``options: sampling:``."""

from __future__ import annotations

import jsonschema
import pytest

from pytest_mlab.llm.sampling import DEFAULT_SAMPLING, SAMPLING_OPTIONS_SCHEMA, Sampling, sampling_for


def test_defaults_are_the_originals_with_a_request_timeout():
    assert sampling_for({}) == DEFAULT_SAMPLING == {
        "main": Sampling(0.5, 2000, 300.0), "fast": Sampling(0.01, 2000, 300.0), "edit": Sampling(0.5, 4000, 600.0)}


def test_options_override_key_by_key():
    got = sampling_for({"sampling": {"main": {"temperature": 0.0}, "edit": {"max_tokens": 8000, "timeout": 30}}})
    assert got == {"main": Sampling(0.0, 2000, 300.0), "fast": DEFAULT_SAMPLING["fast"],
                   "edit": Sampling(0.5, 8000, 30)}


@pytest.mark.parametrize("value", [
    {"boss": {}}, {"main": {"top_p": 1}}, {"main": {"temperature": -0.1}}, {"main": {"max_tokens": 0}},
    {"main": {"max_tokens": 1.5}}, {"fast": {"timeout": 0}}, {"edit": {"temperature": "hot"}}, {"main": []}])
def test_the_schema_refuses_what_cannot_be_sent(value):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(value, SAMPLING_OPTIONS_SCHEMA)


def test_the_schema_accepts_every_role_and_key():
    jsonschema.validate({role: {"temperature": 1, "max_tokens": 10, "timeout": 0.5} for role in DEFAULT_SAMPLING},
                        SAMPLING_OPTIONS_SCHEMA)
