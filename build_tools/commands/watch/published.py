"""`manual watch RUN --contract FILE|URL`: a published edition's contract, checked against that edition's manifest.

An edition's site serves its contract.json beside its manifest.json, which hashes it (`_manifest.contract_section`),
so the reader holds a job against the edition they read, with no build of their own. A URL is fetched with
urllib: https only (plain http only to this machine, 127.0.0.1 or localhost: a local copy of the site), no
user name or password in it, each redirect held to the same rules, a size limit and a time limit. A FILE is
checked against a manifest.json beside it when there is one (a local build's site/ has none: publishing adds it).
"""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.client import HTTPMessage
from pathlib import Path
from typing import IO

from build_tools.checking.contract import CONTRACT_FILE
from build_tools.core._exceptions import ManualError, display_path

MANIFEST_FILE = "manifest.json"
CONTRACT_LIMIT = 16 * 1024 * 1024  # a contract is tens of kB
MANIFEST_LIMIT = 64 * 1024 * 1024  # a manifest hashes every run file: a few MB
TIMEOUT_S = 30.0
EXAMPLE = "https://example.org/manual/2026.10/contract.json"
# What a URL may hold: printable ASCII without spaces (a browser's address bar encodes the rest as %XX).
_URL_TEXT = re.compile(r"[!-~]+")


@dataclass(frozen=True)
class Published:
    """A contract's bytes, where they came from, and the edition its manifest says it is (None: not checked)."""

    data: bytes
    where: str
    edition: str | None


def is_url(text: str) -> bool:
    return text.lower().startswith(("https://", "http://"))


def checked_url(text: str) -> str:
    """The URL of an edition's contract.json, or ManualError saying what a URL must be."""
    def refused(why: str) -> ManualError:
        return ManualError(f"--contract {text[:200]!r}: {why}", f"name an edition's contract.json, e.g. {EXAMPLE}")

    if not _URL_TEXT.fullmatch(text):
        raise refused("a URL is printable ASCII without spaces (encode the rest as %XX)")
    parts = urllib.parse.urlsplit(text)
    if parts.username is not None or parts.password is not None:
        raise refused("a URL with a user name or password is not fetched")
    try:
        host, _ = parts.hostname, parts.port
    except ValueError:
        raise refused("its port is not a number from 0 to 65535") from None
    if not host:
        raise refused("it names no host")
    if parts.scheme.lower() != "https" and not (parts.scheme.lower() == "http" and _loopback(host)):
        raise refused("only https is fetched (plain http only from this machine, 127.0.0.1 or localhost)")
    if parts.query or parts.fragment or not parts.path.endswith(f"/{CONTRACT_FILE}"):
        raise refused(f"expected the address of an edition's {CONTRACT_FILE}, with no ?query or #fragment")
    return text


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def manifest_url(contract_url: str) -> str:
    """The manifest beside the contract: the edition's folder holds both."""
    return contract_url[:-len(CONTRACT_FILE)] + MANIFEST_FILE


class _SameRules(urllib.request.HTTPRedirectHandler):
    """A redirect is followed only to a URL that the same rules allow (never from https to another machine's http)."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: HTTPMessage,
                         newurl: str) -> urllib.request.Request | None:
        target = urllib.parse.urljoin(req.full_url, newurl)
        name = req.full_url.rsplit("/", 1)[-1]
        if not target.endswith(f"/{name}"):
            raise ManualError(f"{req.full_url}: redirected to {target[:200]!r}, which is not a {name}",
                              "name the edition's own address")
        checked_url(target[:-len(name)] + CONTRACT_FILE)  # the same rules as the address given
        return super().redirect_request(req, fp, code, msg, headers, target)


def fetch(url: str, limit: int) -> bytes:
    """The body at url, at most `limit` bytes, within TIMEOUT_S; ManualError naming the URL and what failed."""
    opener = urllib.request.build_opener(_SameRules())
    request = urllib.request.Request(url, headers={"User-Agent": "miles-spark-manual (manual watch)"})
    try:
        with opener.open(request, timeout=TIMEOUT_S) as response:
            declared = response.headers.get("Content-Length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise _too_large(url, limit)
            data: bytes = response.read(limit + 1)
    except urllib.error.HTTPError as error:
        raise ManualError(f"{url}: the server answered {error.code} {error.reason}",
                          "check the address: an edition's site serves contract.json and manifest.json") from None
    except urllib.error.URLError as error:
        raise ManualError(f"{url}: cannot be fetched ({error.reason})", "check the address and the network") from None
    except TimeoutError:
        raise ManualError(f"{url}: no answer within {TIMEOUT_S:g} s", "check the address and the network") from None
    except (http.client.HTTPException, OSError) as error:  # the connection closed mid-answer, a garbled answer
        raise ManualError(f"{url}: cannot be fetched ({type(error).__name__}: {error})",
                          "check the address and the network") from None
    if len(data) > limit:
        raise _too_large(url, limit)
    return data


def _too_large(url: str, limit: int) -> ManualError:
    return ManualError(f"{url}: larger than {limit / (1024 * 1024):g} MB, which no edition's file is",
                       "check the address")


def read(where: str) -> Published:
    """The contract at `where` (a URL or a file), checked against its edition's manifest where there is one."""
    if is_url(where):
        url = checked_url(where)
        data = fetch(url, CONTRACT_LIMIT)
        manifest_at = manifest_url(url)
        return Published(data, url, check(data, url, fetch(manifest_at, MANIFEST_LIMIT), manifest_at))
    path = Path(where)
    if not path.is_file():
        raise ManualError(f"{display_path(path)}: no contract to watch against",
                          "name an edition's contract.json (a file, or its URL), or run `make` first (it writes "
                          "site/contract.json)")
    beside = path.parent / MANIFEST_FILE
    data = read_file(path, CONTRACT_LIMIT)
    if not beside.is_file():
        return Published(data, display_path(path), None)
    return Published(data, display_path(path), check(data, display_path(path), read_file(beside, MANIFEST_LIMIT),
                                                     display_path(beside)))


def read_file(path: Path, limit: int = CONTRACT_LIMIT) -> bytes:
    """A contract or manifest on disk, read as every input is (_files.read_bytes: a plain file, not a link out, a
    FIFO or a device, within the limit); its problem is one line."""
    from build_tools.core._exceptions import InputProblem
    from build_tools.core._files import read_bytes

    try:
        return read_bytes(path, limit)
    except InputProblem as error:
        raise ManualError(str(error.problem), "rebuild it with `make`, or name another with --contract") from None


def check(contract: bytes, contract_at: str, manifest: bytes, manifest_at: str) -> str:
    """The edition whose manifest hashes these contract bytes; ManualError when it does not, or cannot."""
    from build_tools.editions import _manifest

    try:
        document = _manifest.loads(manifest)
    except ValueError as error:
        raise ManualError(f"{manifest_at}: not an edition's manifest: {error}",
                          "name the contract of a published edition, whose folder holds its manifest.json") from None
    edition = str(document["edition"])
    hashes = document.get(_manifest.CONTRACT_SECTION) or {}
    published = hashes.get(CONTRACT_FILE)
    if not isinstance(published, str):
        raise ManualError(f"{manifest_at}: edition {edition}'s manifest does not hash its {CONTRACT_FILE} (an edition "
                          "published before manifests did): the contract cannot be checked against it",
                          "watch against an edition published since, or a contract.json of your own build "
                          "(site/contract.json)")
    found = hashlib.sha256(contract).hexdigest()
    if found != published:
        raise ManualError(f"{contract_at}: not the {CONTRACT_FILE} edition {edition} published (its sha256 is "
                          f"{found[:12]}..., the manifest's {published[:12]}...)",
                          "fetch it again from the edition's site; a changed copy is not the edition's contract")
    return edition
