"""`manual watch RUN --contract FILE|URL` (build_tools/commands/watch/published.py): a published edition's
contract.json, fetched from the edition's site (a local http.server on 127.0.0.1 here) and checked against the
manifest.json beside it, which hashes the contract and its schema (build_tools/editions/_manifest.py)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_tools.checking.contract import CONTRACT_FILE, SCHEMA_FILE
from build_tools.cli import main
from build_tools.commands.watch import published
from build_tools.editions import _manifest
from tests.commands.watch.test_watch import contract, meta, record

ROOT = Path(__file__).resolve().parents[3]


def edition_folder(folder: Path, edition: str = "test") -> Path:
    """An edition's folder as its site serves it: contract.json, its schema, and the manifest hashing both."""
    from build_tools.checking.contract import schema_text

    folder.mkdir(parents=True, exist_ok=True)
    (folder / CONTRACT_FILE).write_text(contract().model_dump_json(), encoding="utf-8")
    (folder / SCHEMA_FILE).write_text(schema_text(), encoding="utf-8")
    manifest = {"edition": edition, _manifest.CONTRACT_SECTION: _manifest.contract_section(folder)}
    (folder / "manifest.json").write_text(_manifest.dumps(manifest), encoding="utf-8")
    return folder


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # the test's output is the watch's, not the server's log
        pass


class _Redirecting(_Quiet):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(302)
        self.send_header("Location", "http://example.org/manual/test/contract.json")
        self.end_headers()


def serve(folder: Path, handler: type[http.server.SimpleHTTPRequestHandler] = _Quiet) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    edition_folder(tmp_path / "site" / "test")
    yield from serve(tmp_path / "site")


@pytest.fixture
def job(tmp_path: Path) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "meta.json").write_text(meta())
    (folder / "metrics.jsonl").write_text(record(0, 0.6) + record(1, 0.95) + record(2, 0.7))
    return folder


def watch(job: Path, where: str, capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, list[str], list[str]]:
    code = main(["--root", str(root), "watch", str(job), "--format", "jsonl", "--until-idle", "0.5",
                 "--contract", where])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def test_a_published_contract_is_fetched_checked_and_holds_the_job(site: str, job: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = watch(job, f"{site}/test/{CONTRACT_FILE}", capsys, tmp_path)
    assert code == 7  # the breach at step 1 is kept to the end, whatever came after it
    changes = [json.loads(line) for line in out]
    assert [(change["status"], change["step"]) for change in changes if change["kind"] == "range"] == [
        ("undecided", None), ("inside", 0), ("outside", 1)]
    assert changes[-1]["breaches"] == [{"item": "rollout/raw_reward", "first_step": 1, "last_step": 1, "worst": 0.95,
                                        "steps_outside": 1, "link": "06-metrics.html"}]
    assert err[0] == ("Watched r against the manual's edition test (contract version 3): 3 rollout steps (0 to 2); "
                      "ended: no new data for 0.5 s")
    assert err[-1] == f"          see Metrics page, Rollout: {site}/test/06-metrics.html"


def test_the_same_contract_as_a_file_beside_its_manifest(job: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder = edition_folder(tmp_path / "edition")
    code, out, _ = watch(job, str(folder / CONTRACT_FILE), capsys, tmp_path)
    assert code == 7 and len(out) == 4  # three changes of status, then the summary


def test_a_contract_changed_after_publishing_is_refused(tmp_path: Path, job: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder = edition_folder(tmp_path / "site" / "test")
    text = (folder / CONTRACT_FILE).read_text(encoding="utf-8").replace("0.9", "0.99")
    (folder / CONTRACT_FILE).write_text(text, encoding="utf-8")
    found = hashlib.sha256(text.encode()).hexdigest()
    for where in serve(tmp_path / "site"):
        url = f"{where}/test/{CONTRACT_FILE}"
        code, out, err = watch(job, url, capsys, tmp_path)
        assert (code, out) == (2, [])
        assert err[0].startswith(f"ERROR {url}: not the contract.json edition test published (its sha256 is "
                                 f"{found[:12]}..., the manifest's ")


def test_an_edition_whose_manifest_does_not_hash_its_contract_is_refused(tmp_path: Path, job: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = edition_folder(tmp_path / "edition")
    (folder / "manifest.json").write_text(json.dumps({"edition": "2026.10", "runs": {}}), encoding="utf-8")
    code, _, err = watch(job, str(folder / CONTRACT_FILE), capsys, tmp_path)
    assert code == 2
    assert err[0] == (f"ERROR {folder / 'manifest.json'}: edition 2026.10's manifest does not hash its contract.json "
                      "(an edition published before manifests did): the contract cannot be checked against it")


def test_a_contract_of_another_edition_than_its_manifest_is_refused(tmp_path: Path, job: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    folder = edition_folder(tmp_path / "edition", edition="2026.11")  # the manifest hashes a contract of "test"
    code, _, err = watch(job, str(folder / CONTRACT_FILE), capsys, tmp_path)
    assert code == 2
    assert err == [f"ERROR {folder / CONTRACT_FILE}: the contract of edition test, but its manifest is edition "
                   "2026.11's", "hint: name the contract.json of the edition's own folder"]


@pytest.mark.parametrize(("url", "why"), [
    ("http://example.org/manual/2026.10/contract.json",
     "only https is fetched (plain http only from this machine, 127.0.0.1 or localhost)"),
    ("https://user:secret@example.org/manual/2026.10/contract.json",
     "a URL with a user name or password is not fetched"),
    ("https://example.org/manual/2026.10/", "expected the address of an edition's contract.json, with no ?query or "
                                            "#fragment"),
    ("https://example.org/contract.json?x=1", "expected the address of an edition's contract.json, with no ?query or "
                                              "#fragment"),
    ("https://example.org:99999/contract.json", "its port is not a number from 0 to 65535"),
    ("https:///contract.json", "it names no host"),
    ("https://example.org/a b/contract.json", "a URL is printable ASCII without spaces (encode the rest as %XX)"),
    ("https://exämple.org/contract.json", "a URL is printable ASCII without spaces (encode the rest as %XX)"),
])
def test_a_url_that_is_not_an_editions_contract_is_refused_before_any_request(url: str, why: str, job: Path,
                                                                              tmp_path: Path, capsys) -> None:
    code, _, err = watch(job, url, capsys, tmp_path)
    assert code == 2
    assert err == [f"ERROR --contract {url!r}: {why}",
                   f"hint: name an edition's contract.json, e.g. {published.EXAMPLE}"]


def test_loopback_is_the_only_plain_http() -> None:
    assert published.checked_url("http://localhost:8000/x/contract.json")
    assert published.checked_url("http://[::1]:8000/contract.json")
    with pytest.raises(Exception, match="only https"):
        published.checked_url("http://127.0.0.1.example.org/contract.json")


def test_a_redirect_to_plain_http_elsewhere_is_refused(tmp_path: Path, job: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    edition_folder(tmp_path / "site" / "test")
    for where in serve(tmp_path / "site", _Redirecting):
        url = f"{where}/test/{CONTRACT_FILE}"
        code, _, err = watch(job, url, capsys, tmp_path)
        assert code == 2 and err[0] == ("ERROR --contract 'http://example.org/manual/test/contract.json': only "
                                        "https is fetched (plain http only from this machine, 127.0.0.1 or localhost)")


def test_a_missing_edition_and_an_oversized_file_are_one_line_each(site: str, job: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    url = f"{site}/2099.01/{CONTRACT_FILE}"
    code, _, err = watch(job, url, capsys, tmp_path)
    assert code == 2 and err[0] == f"ERROR {url}: the server answered 404 File not found"
    monkeypatch.setattr(published, "CONTRACT_LIMIT", 100)
    url = f"{site}/test/{CONTRACT_FILE}"
    code, _, err = watch(job, url, capsys, tmp_path)
    assert code == 2 and err[0] == f"ERROR {url}: larger than 9.53674e-05 MB, which no edition's file is"


def test_a_server_that_never_answers_is_given_up_on(job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(published, "TIMEOUT_S", 0.5)
    with socket.socket() as silent:  # listens, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/test/{CONTRACT_FILE}"
        code, _, err = watch(job, url, capsys, tmp_path)
    assert code == 2
    assert err[0] in (f"ERROR {url}: no answer within 0.5 s", f"ERROR {url}: cannot be fetched (timed out)")


def test_a_server_that_hangs_up_is_one_line_not_a_bug(job: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as rude:  # accepts the connection, closes it without an answer
        rude.bind(("127.0.0.1", 0))
        rude.listen()
        url = f"http://127.0.0.1:{rude.getsockname()[1]}/test/{CONTRACT_FILE}"
        hang_up = threading.Thread(target=lambda: rude.accept()[0].close(), daemon=True)
        hang_up.start()
        code, _, err = watch(job, url, capsys, tmp_path)
    assert code == 2  # whether the request was sent before the close decides which of the two the system says
    assert err[0] in (f"ERROR {url}: cannot be fetched (RemoteDisconnected: Remote end closed connection without "
                      "response)", f"ERROR {url}: cannot be fetched (ConnectionResetError: [Errno 104] Connection "
                      "reset by peer)")


# --- the manifest hashes what watch trusts ---------------------------------------------------------------------


def test_the_manifest_hashes_the_contract_and_its_schema(tmp_path: Path) -> None:
    folder = edition_folder(tmp_path / "site")
    section = _manifest.contract_section(folder)
    assert section == {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
                       for name in (CONTRACT_FILE, SCHEMA_FILE)}
    assert _manifest.CONTRACT_FILES == (CONTRACT_FILE, SCHEMA_FILE)  # the names the contract module writes


def test_verify_reports_a_changed_contract_and_not_an_older_manifests_lack_of_one() -> None:
    rebuilt = {"edition": "e", "contract": {CONTRACT_FILE: "b" * 64, SCHEMA_FILE: "c" * 64}}
    published_now = {"edition": "e", "contract": {CONTRACT_FILE: "a" * 64, SCHEMA_FILE: "c" * 64}}
    assert _manifest.differences(published_now, rebuilt) == [f"contract.{CONTRACT_FILE}: published {'a' * 64}, "
                                                             f"rebuilt {'b' * 64}"]
    assert _manifest.differences({"edition": "e"}, rebuilt) == []  # published before manifests hashed the contract
