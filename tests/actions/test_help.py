"""Request Help answers only when a human is present."""

from __future__ import annotations

from tests.agents.fakes import environment


def test_without_a_human_it_is_an_env_error(tmp_path):
    env = environment(tmp_path, ("Request Help",))
    assert env.step("Request Help", {"request": "which loss?"}).startswith("EnvError: no human is present")


def test_with_a_human_the_answer_is_the_observation(tmp_path):
    asked = []
    env = environment(tmp_path, ("Request Help",), human=lambda text: asked.append(text) or "use MAE\n")
    assert env.step("Request Help", {"request": "which loss?"}) == "A human answered:\nuse MAE"
    assert asked == ["which loss?"]
