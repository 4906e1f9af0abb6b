"""A build's settings: made once from the command line's environment, every variable checked before anything runs."""

from __future__ import annotations

import os

import pytest

from build_tools.core._exceptions import ManualError
from build_tools.core._settings import Settings, from_environment, library_environment, site_environment


def test_an_everyday_build_trusts_its_state_and_an_editions_does_not() -> None:
    assert from_environment({}) == Settings()
    edition = from_environment({"MANUAL_PUBLISH": "1", "SOURCE_DATE_EPOCH": "1792022400"})
    assert (edition.edition, edition.epoch, edition.trust_state) == (True, 1792022400, False)
    assert from_environment({"MANUAL_ENGINE": "zensical"}, all_runs=True) == Settings(engine="zensical", all_runs=True)


def test_every_wrong_variable_is_reported_at_once() -> None:
    with pytest.raises(ManualError) as raised:
        from_environment({"MANUAL_ENGINE": "hugo", "SOURCE_DATE_EPOCH": "1e9; rm -rf /",
                          "MANUAL_SITE_URL": "javascript:alert(1)"})
    assert str(raised.value).splitlines() == [
        "ENGINE='hugo': unknown site engine (expected one of mkdocs, properdocs, zensical)",
        "SOURCE_DATE_EPOCH='1e9; rm -rf /': expected a whole number of seconds since 1970",
        "MANUAL_SITE_URL='javascript:alert(1)': expected an http:// or https:// address",
    ]


def test_the_libraries_get_the_settings_they_read_from_the_environment_for_the_call_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.setenv("MANUAL_SITE_URL", "http://before/")
    with library_environment(site_environment(Settings(epoch=5, site_url=None))):
        assert os.environ.get("SOURCE_DATE_EPOCH") == "5" and "MANUAL_SITE_URL" not in os.environ
    assert "SOURCE_DATE_EPOCH" not in os.environ and os.environ["MANUAL_SITE_URL"] == "http://before/"
