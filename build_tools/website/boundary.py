"""The sealed boundary: which addresses a page of the manual may name.

The site loads nothing from another host when a reader opens it, and the print edition reads nothing but the
files of the built site. So a chapter may link to other pages, to figures and to web pages a reader clicks, and
may embed only files of the manual. A file:// address, an absolute path or a path out of docs/ (linked or
embedded), and an image, stylesheet, script or frame from another host or of any other scheme (data:,
javascript:, ...) are refused three times: in the chapters, with their other problems (`chapter_problems`); in
the pages the PDF is made from, with the stylesheets and images they load, before WeasyPrint runs
(`outside_site`); and by the PDF's URL fetcher, which reads only regular files inside the site (`read_site_file`).
A chapter runs no script either (`html_scripts`): what a script loads cannot be read off the page.
"""

from __future__ import annotations

import html
import io
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from build_tools.core._exceptions import Problem
from build_tools.website import allowlist

# Markdown always has these under mkdocs (its builtins); attr_list and md_in_html are added when mkdocs.yml
# cannot be read, since they are how a chapter writes attributes: checking with them finds more, never less.
MKDOCS_BUILTINS = ("toc", "tables", "fenced_code")
FALLBACK_EXTENSIONS = ("attr_list", "md_in_html")


@dataclass(frozen=True)
class Address:
    """One address a page names, entities decoded."""

    value: str
    embeds: bool  # loaded when the page is opened or printed (image, stylesheet, script, frame), not clicked


class Refused(Exception):
    """An address the print edition does not read; the message says why."""


# --- finding the addresses of a page --------------------------------------------------------------------------

_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})(?:\r\n|[ \t\r\n\f])?|\\(.)")
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_CSS_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s]*))""", re.I)
_CSS_IMPORT = re.compile(r"""@import\s+(?:"([^"]*)"|'([^']*)')""", re.I)
_CSS_IMAGE_SET = re.compile(r"image-set\(([^)]*)\)", re.I)
_CSS_STRING = re.compile(r""""([^"]*)"|'([^']*)'""")
_C0_AND_SPACE = "".join(chr(code) for code in range(0x21))
_REFRESH_URL = re.compile(r"^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?['\"]?([^'\"]*)", re.I)  # "5; url=..." or "5; ..."


def _css_unescape(match: re.Match[str]) -> str:
    if match[2] is not None:
        return match[2]
    code = int(match[1], 16)
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"


def css_addresses(text: str) -> list[Address]:
    """Every address a stylesheet loads (url(), @import, image-set()), in order. Escapes are decoded first, as a
    browser reads them (`\\75 rl(` is `url(`)."""
    text = _CSS_ESCAPE.sub(_css_unescape, _CSS_COMMENT.sub("", text))
    found = []
    for pattern in (_CSS_URL, _CSS_IMPORT):
        for match in pattern.finditer(text):
            found.append((match.start(), next(group for group in match.groups() if group is not None)))
    for match in _CSS_IMAGE_SET.finditer(text):
        found += [(match.start(), string[1] if string[1] is not None else string[2])
                  for string in _CSS_STRING.finditer(match[1])]
    return [Address(value.strip(), True) for _, value in sorted(found)]


_LOADED = ("src", "data", "poster", "background")  # on any element: fetched by the page itself


def _elements(text: str) -> Iterator[tuple[str, dict[str, str], str]]:
    """Each element of an HTML or SVG text, in document order: its tag, attributes (namespace dropped: xlink:href
    is an href) and text. It is parsed as a browser parses it, with the HTML parser WeasyPrint uses (tinyhtml5,
    after the WHATWG specification): comments, CDATA and raw text end where a browser ends them, so no element is
    hidden from the checks that a browser or WeasyPrint would read."""
    import tinyhtml5  # type: ignore[import-untyped]  # WeasyPrint's HTML parser; no type hints

    # A file object, never the text itself: tinyhtml5 reads a short string that names a file as that file.
    for element in tinyhtml5.parse(io.StringIO(text)).iter():
        if isinstance(element.tag, str):  # not a comment
            yield (element.tag.rpartition("}")[2], {name.rpartition("}")[2]: value for name, value in
                                                     element.attrib.items()}, element.text or "")


_PREFIXES = {allowlist.XLINK_NS: "xlink:", allowlist.XML_NS: "xml:", "http://www.w3.org/2000/xmlns/": "xmlns:"}


def _named_elements(text: str) -> Iterator[tuple[str, str, dict[str, str], str]]:
    """Each element of an HTML text, parsed as _elements parses it: its namespace, tag, attributes named as
    written (xlink:href, xml:space) and text."""
    import tinyhtml5

    for element in tinyhtml5.parse(io.StringIO(text)).iter():
        if isinstance(element.tag, str):  # not a comment
            namespace, _, tag = element.tag[1:].rpartition("}")
            attributes = {}
            for name, value in element.attrib.items():
                space, _, local = name[1:].rpartition("}") if name.startswith("{") else ("", "", name)
                prefix = "" if local == "xmlns" else _PREFIXES.get(space, f"{{{space}}}" if space else "")
                attributes[prefix + local] = value
            yield namespace, tag, attributes, element.text or ""


def html_addresses(text: str) -> list[Address]:
    """Every address an HTML or SVG text names, in document order (_elements)."""
    return [address for tag, attributes, inner in _elements(text)
            for address in _element_addresses(tag, attributes, inner)]


def html_scripts(text: str) -> list[str]:
    """What in an HTML or SVG text runs a script when the page is opened, in document order: each <script>
    element, inline or not, and each event handler attribute (onload=, onerror=, ...). A script can load anything
    from anywhere, and what it loads cannot be read off the page. (A frame's srcdoc is not read: a page has no
    frame, nor any srcdoc, page_refusals says.)"""
    found = []
    for tag, attributes, _ in _elements(text):
        if tag == "script":
            found.append("<script")
        found += [f"{name}=" for name in attributes if name.lower().startswith("on")]
    return found


def _element_addresses(tag: str, values: dict[str, str], text: str) -> list[Address]:
    """What one element loads (its sources, stylesheet, style, inline frame) and the link it is (`values`: its
    attributes, as _elements gives them)."""
    # An <a> is a link to click, unless it attaches its target (WeasyPrint embeds it in the PDF).
    clicked = tag in ("a", "area") and "attachment" not in values.get("rel", "").lower().split()
    found = []
    for name, value in values.items():
        if name in _LOADED:
            found.append(Address(value.strip(), True))
        elif name == "href":
            found.append(Address(value.strip(), not clicked))
        elif name in ("srcset", "imagesrcset"):
            found += [Address(part.split()[0], True) for part in value.split(",") if part.split()]
        elif name == "style":
            found += css_addresses(value)
        elif name == "srcdoc":  # a frame's whole document, written inline
            found += html_addresses(value)
    refresh = _REFRESH_URL.search(values.get("content", ""))
    if tag == "meta" and values.get("http-equiv", "").lower() == "refresh" and refresh and refresh[1].strip():
        found.append(Address(refresh[1].strip(), True))  # the page loads it by itself
    if tag == "style":
        found += css_addresses(text)
    return found


# --- the chapters (the site) ------------------------------------------------------------------------------------


def _clean(address: str) -> str:
    """The address as a browser reads it: outer spaces and controls dropped, tabs and newlines inside removed,
    a backslash taken as a slash."""
    return re.sub(r"[\t\n\r]", "", address).strip(_C0_AND_SPACE).replace("\\", "/")


def page_refusal(address: Address) -> str | None:
    """Why a chapter (a page at the top of docs/) may not name the address, as the end of a sentence that
    starts with the address; None when it may."""
    value = _clean(address.value)
    if not value or value.startswith("#"):
        return None
    try:
        parts = urlsplit(value)
    except ValueError:  # a bracketed host that does not close, `http://[x`
        return "not an address a browser reads: a page names only the manual's own pages and figures, and web pages"
    scheme = parts.scheme.lower()
    web = scheme in ("http", "https") or (not scheme and value.startswith("//"))
    if not address.embeds and (web or scheme == "mailto"):
        return None  # a link a reader clicks may leave the manual; nothing loads it
    if web:
        return "a file of another host: the site loads nothing from outside (a link to it is fine)"
    if scheme == "file":
        reason = "a file:// address"
    elif scheme:
        reason = f"a {scheme}: address"
    elif unquote(parts.path).startswith("/"):
        reason = "an absolute path"
    elif posixpath.normpath(unquote(parts.path)).split("/")[0] == "..":
        reason = "a path out of docs/"
    else:
        return None
    return f"{reason}: a page names only the manual's own pages and figures, and web pages to click"


_URL_CHAR = r"[\w.~:/?#@%-]"  # a character an address may hold: a mention is not part of a longer one


def _line_of(address: str, lines: Sequence[str], taken: dict[str, set[int]]) -> int | None:
    """The first line of the source that names the address whole (as written, or with its entities decoded),
    not taken by an earlier mention of the same address; None when none does (it was written otherwise)."""
    seen = taken.setdefault(address, set())
    whole = re.compile(rf"(?<!{_URL_CHAR}){re.escape(address)}(?!{_URL_CHAR})")
    for number, text in enumerate(lines, start=1):
        if number not in seen and (whole.search(text) or whole.search(html.unescape(text))):
            seen.add(number)
            return number
    return None


def chapter_problems(shown: str, text: str, render: Callable[[str], str]) -> list[Problem]:
    """A problem for every element, attribute, style or address of the chapter's page that the manual does not
    allow (allowlist.py; addresses by `page_refusal`) and every script, with the line of the chapter that writes
    it. render turns the chapter's Markdown into its page's HTML, as mkdocs does, so that Markdown links, images,
    reference links, attribute lists and raw HTML are all read as the site reads them."""
    lines = text.splitlines()
    taken: dict[str, set[int]] = {}
    page = render(text)
    problems = []
    for found in page_refusals(page):
        line = _line_of_found(found, lines, taken)  # every mention in order, an allowed address's too
        if found.message:
            problems.append(Problem(shown, line, None, found.message))
    for script in html_scripts(page):
        problems.append(Problem(shown, _line_of_code(script, lines, taken), None,
                                f"runs a script ({script}...): {SCRIPT_TAIL}"))
    return problems


@dataclass(frozen=True)
class Found:
    """One thing a page holds that the allowlist refuses, its message; or, with no message, an address it allows
    (its mention is still taken, so that a later mention of the same address finds its own line). `kind` ("tag",
    "attribute" or "address") and `name` say what its line of the chapter names."""

    message: str
    kind: str
    name: str


ELEMENT_TAIL = ("a page holds text, tables, code, figures and links (build_tools/website/allowlist.py lists what it "
                "may hold)")
SVG_TAIL = ("a drawing has no animation, script, filter or foreign content (build_tools/website/allowlist.py lists "
            "what it may hold)")


def page_refusals(page: str) -> list[Found]:
    """Everything of a page's HTML (a fragment, parsed as a browser parses it) outside the allowlist, in document
    order: an element (its attributes are not read further), an attribute, a style, an address. A <script> and an
    event handler are left to html_scripts, which says why."""
    found: list[Found] = []
    for namespace, tag, attributes, _ in _named_elements(page):
        if namespace == allowlist.HTML_NS and tag in allowlist.HTML_FRAME or tag.lower() == "script":
            continue
        svg = namespace == allowlist.SVG_NS
        if svg and tag not in allowlist.SVG_INLINE_ELEMENTS:
            found.append(Found(f"uses <{tag}> in an SVG drawing, which the manual does not need: {SVG_TAIL}", "tag",
                               tag))
            continue
        if not svg and (namespace != allowlist.HTML_NS or tag not in allowlist.HTML_ELEMENTS):
            found.append(Found(f"uses <{tag}>, which a page of the manual does not need: {ELEMENT_TAIL}", "tag", tag))
            continue
        found += _attribute_refusals(tag, attributes, svg, "")
    return found


def _attribute_refusals(tag: str, attributes: dict[str, str], svg: bool, folder: str) -> list[Found]:
    """What of an allowed element's attributes the allowlist refuses: the attribute, its CSS or its address.
    folder: where a relative address starts, inside docs/ ("" for a chapter)."""
    if svg:
        allowed = allowlist.SVG_ATTRIBUTES | allowlist.METADATA_ATTRIBUTES | {"xmlns", "xmlns:xlink"}
    else:
        allowed = allowlist.HTML_GLOBAL | allowlist.HTML_ELEMENTS[tag]
    clicked = tag == "a" and "attachment" not in attributes.get("rel", "").lower().split()
    found = []
    for name, value in attributes.items():
        lowered = name.lower()
        if lowered.startswith("on"):
            continue  # an event handler: html_scripts
        if lowered not in allowed:
            where = " in an SVG drawing" if svg else ""
            found.append(Found(f"gives <{tag}>{where} the attribute {name}=, which the manual does not need: "
                               f"{SVG_TAIL if svg else ELEMENT_TAIL}", "attribute", name))
        elif lowered in allowlist.ADDRESSES or lowered in allowlist.ADDRESS_LISTS:
            found += _address_refusals(lowered, value, embeds=not (clicked and lowered in ("href", "xlink:href")),
                                       folder=folder)
        elif lowered == "style" or (svg and lowered not in allowlist.SVG_NOT_CSS):
            refused = allowlist.css_refusal(value, "declarations" if lowered == "style" else "value")
            if refused:
                what, why, _ = refused
                # A url() is found on its line as an address is; anything else by its attribute.
                kind, named = ("address", what[4:-1]) if what.startswith("url(") else ("attribute", name)
                found.append(Found(f"gives <{tag}> {'a style' if lowered == 'style' else name + '='} with "
                                   f"{quoted(what)}, {why}", kind, named))
    return found


def _address_refusals(name: str, value: str, *, embeds: bool, folder: str) -> list[Found]:
    """The addresses of one attribute the page may not name (page_refusal); an srcset names several."""
    values = [part.split()[0] for part in value.split(",") if part.split()] if name in allowlist.ADDRESS_LISTS \
        else [value.strip()]
    found = []
    for address in values:
        inside = _clean(address)
        scheme = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", inside)
        relative = folder and inside and not inside.startswith(("#", "/")) and not scheme
        reason = page_refusal(Address(posixpath.join(folder, inside) if relative else address, embeds))
        verb = "embeds" if embeds else "links to"
        found.append(Found(f"{verb} {quoted(address)}, {reason}" if reason else "", "address", address))
    return found  # an empty message: allowed, its mention still taken in order (_line_of)


def _line_of_found(found: Found, lines: Sequence[str], taken: dict[str, set[int]]) -> int | None:
    if found.kind == "address":
        return _line_of(found.name, lines, taken) if found.name else None
    pattern = rf"<{re.escape(found.name)}(?![\w:-])" if found.kind == "tag" else \
        rf"(?<![\w:-]){re.escape(found.name)}\s*="
    return _first_untaken(f"{found.kind} {found.name.lower()}", re.compile(pattern, re.I), lines, taken)


def _first_untaken(key: str, pattern: re.Pattern[str], lines: Sequence[str], taken: dict[str, set[int]]) -> int | None:
    seen = taken.setdefault(key, set())
    for number, text in enumerate(lines, start=1):
        if number not in seen and pattern.search(text):
            seen.add(number)
            return number
    return None


class _Stopped(Exception):
    """An SVG file whose reading stops at once: a DTD of its own (its entities could write any element), or a
    root that is not SVG."""


_XML_PREFIXES = {allowlist.XLINK_NS: "xlink:", allowlist.XML_NS: "xml:",
                 **dict(zip(allowlist.METADATA_NS, ("rdf:", "cc:", "dc:"), strict=True))}


def svg_file_problems(shown: str, data: bytes, folder: str) -> list[Problem]:
    """A problem for everything of an SVG file of docs/ outside the allowlist (SVG_ELEMENTS, SVG_ATTRIBUTES, its
    CSS, its addresses: a link may leave the manual, anything loaded is a file of docs/), with its line. The site
    serves it as it is, and a page may show it (<img>) or a reader open it. It is read as the XML it is, with
    expat: a DTD of its own (whose entities expand into elements), a processing instruction (<?xml-stylesheet
    loads a stylesheet) and an element outside the SVG namespace are refused too. folder: the file's folder in
    docs/ ("" at its top), where its relative addresses start."""
    from xml.parsers import expat

    parser = expat.ParserCreate(namespace_separator="}")
    problems: list[Problem] = []
    metadata = [0]  # how deep inside <metadata>: matplotlib's RDF description is allowed there
    seen_root = [False]  # the root is SVG: an element of another namespace inside it is one problem each
    style: list[str] = []  # the text of the open <style>, and its line

    def refuse(message: str) -> None:
        problems.append(Problem(shown, parser.CurrentLineNumber, None, message))

    def start(name: str, attributes: dict[str, str]) -> None:
        namespace, _, tag = name.rpartition("}")
        metadata[0] += bool(metadata[0]) or (namespace == allowlist.SVG_NS and tag == "metadata")
        if namespace in allowlist.METADATA_NS and metadata[0]:
            attributes = {key: value for key, value in attributes.items()
                          if _xml_name(key) not in allowlist.METADATA_ATTRIBUTES}
            refuse_attributes(tag, attributes)
            return
        if namespace != allowlist.SVG_NS:
            refuse(f"uses <{tag}> of {'the namespace ' + namespace if namespace else 'no namespace'}: an SVG drawing "
                   f'of the manual is SVG (xmlns="{allowlist.SVG_NS}") and holds no other markup')
            if not seen_root[0]:
                raise _Stopped  # not an SVG file at all: one line says so
            return
        seen_root[0] = True
        if tag not in allowlist.SVG_ELEMENTS:
            refuse(f"uses <{tag}>, which an SVG drawing of the manual does not need: {SVG_TAIL}")
            return
        if tag == "style":
            style[:] = [str(parser.CurrentLineNumber)]
        refuse_attributes(tag, attributes)

    def refuse_attributes(tag: str, attributes: dict[str, str]) -> None:
        named = {_xml_name(key): value for key, value in attributes.items()}
        for found in _attribute_refusals(tag, named, True, folder):
            if found.message:
                refuse(found.message.replace(" in an SVG drawing", ""))
        refuse_script = [key for key in named if key.lower().startswith("on")]
        for key in refuse_script:
            refuse(f"runs a script ({key}=...): {SCRIPT_TAIL}")

    def end(name: str) -> None:
        metadata[0] = max(metadata[0] - 1, 0)
        if style and name == f"{allowlist.SVG_NS}}}style":
            line, text = int(style[0]), "".join(style[1:])
            style.clear()
            refused = allowlist.css_refusal(text, "stylesheet")
            if refused:  # its line: the text starts on the line of <style>
                what, why, inner = refused
                problems.append(Problem(shown, line + inner - 1, None, f"has {quoted(what)} in its <style>, {why}"))

    def doctype(name: str, system: str | None, public: str | None, internal: bool) -> None:
        if internal:
            refuse("declares a DTD of its own (<!DOCTYPE ... [ ]>), whose entities could write any element: an SVG "
                   "drawing of the manual declares none")
            raise _Stopped

    def instruction(target: str, _data: str) -> None:
        refuse(f"holds the processing instruction <?{target}, which an SVG drawing of the manual does not need "
               "(<?xml-stylesheet loads a stylesheet)")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = lambda text: style.append(text) if style else None
    parser.StartDoctypeDeclHandler = doctype
    parser.ProcessingInstructionHandler = instruction
    try:
        parser.Parse(data, True)
    except _Stopped:
        pass
    except expat.ExpatError as error:
        problems.append(Problem(shown, error.lineno, None,
                                f"not an SVG file a browser reads: {expat.ErrorString(error.code)}"))
    return problems


def _xml_name(name: str) -> str:
    """An attribute's name from expat ("namespace}local") as written with its usual prefix (xlink:href); another
    namespace is kept whole, so no list allows it."""
    namespace, _, local = name.rpartition("}")
    if not namespace:
        return local
    return _XML_PREFIXES[namespace] + local if namespace in _XML_PREFIXES else f"{{{namespace}}}{local}"


SCRIPT_TAIL = "a page of the manual runs no script of its own, since what a script loads cannot be checked"


def _line_of_code(code: str, lines: Sequence[str], taken: dict[str, set[int]]) -> int | None:
    """The first line naming `<script` or `onload=` (any case, spaces before `=` allowed) not taken by an earlier
    mention; None when none does (it was written otherwise, an entity or a srcdoc)."""
    seen = taken.setdefault(code.lower(), set())
    start = re.compile(r"<script\b" if code == "<script" else rf"\b{re.escape(code[:-1])}\s*=", re.I)
    for number, text in enumerate(lines, start=1):
        if number not in seen and start.search(text):
            seen.add(number)
            return number
    return None


def quoted(value: str) -> str:
    """An address in a message: quoted, at most 200 characters, control characters escaped (one line)."""
    value = value if len(value) <= 200 else value[:197] + "..."
    return "'" + value.encode("unicode_escape").decode("ascii") + "'" if not value.isprintable() else f"'{value}'"


def markdown_renderer(mkdocs_yml: Path) -> Callable[[str], str]:
    """A chapter's Markdown to HTML with the extensions of mkdocs.yml and mkdocs' builtins; when mkdocs.yml
    cannot be read or names an extension that does not load, with FALLBACK_EXTENSIONS (mkdocs reports the
    config's own problems when it builds the site)."""
    import markdown

    names, configs = _extensions(mkdocs_yml)
    try:
        engine = markdown.Markdown(extensions=[*MKDOCS_BUILTINS, *names], extension_configs=configs)
    except Exception:  # an extension that does not load: mkdocs names it; the addresses are still checked
        engine = markdown.Markdown(extensions=[*MKDOCS_BUILTINS, *FALLBACK_EXTENSIONS])

    def render(text: str) -> str:
        engine.reset()
        return str(engine.convert(text))

    return render


def _extensions(mkdocs_yml: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The markdown_extensions of mkdocs.yml (names, and the configs of those that have one)."""
    try:
        from mkdocs.utils.yaml import yaml_load

        config = yaml_load(mkdocs_yml.read_text(encoding="utf-8"))
        listed = config.get("markdown_extensions") or []
    except Exception:  # no mkdocs.yml, or not one mkdocs reads: it says so when it builds the site
        return list(FALLBACK_EXTENSIONS), {}
    names, configs = [], {}
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict) and len(item) == 1:
            name, settings = next(iter(item.items()))
            names.append(str(name))
            if isinstance(settings, dict):
                configs[str(name)] = settings
    return names, configs


# --- the print edition -----------------------------------------------------------------------------------------


def site_path(url: str, site: Path) -> Path:
    """The regular file of the built site a URL names, symbolic links and `..` resolved; Refused for anything
    else: another scheme, another host, a path that resolves outside the site, a missing or special file."""
    try:
        parts = urlsplit(_clean(url))
    except ValueError:  # a bracketed host that does not close, `http://[x`
        raise Refused("not an address of the built site") from None
    scheme = parts.scheme.lower()
    if scheme in ("http", "https") or (not scheme and parts.netloc):
        raise Refused("a file of another host")
    if scheme != "file":
        raise Refused(f"a {scheme}: address" if scheme else "not an address of the built site")
    if parts.netloc not in ("", "localhost"):
        raise Refused(f"a file of host {parts.netloc}")
    path = unquote(parts.path)
    if "\x00" in path:
        raise Refused("not a path")
    try:
        real = Path(path).resolve()  # links followed as far as they go; a missing file is found below
    except (OSError, RuntimeError):  # a link loop
        raise Refused("not a file of the built site") from None
    if not real.is_relative_to(site.resolve()):
        raise Refused("outside the built site")
    try:
        mode = real.stat().st_mode
    except OSError:
        raise Refused("not a file of the built site") from None
    if not stat.S_ISREG(mode):
        raise Refused("not a regular file of the built site")
    return real


def read_site_file(url: str, site: Path) -> bytes:
    """The bytes of the site's file the URL names (site_path); a link swapped in since is not followed, and a
    FIFO is not waited on."""
    real = site_path(url, site)
    try:
        handle = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise Refused("not a file of the built site") from None
    with os.fdopen(handle, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise Refused("not a regular file of the built site")
        return file.read()


def outside_site(pages: Iterable[tuple[str, str, Sequence[str]]], site: Path) -> list[Problem]:
    """A problem for every address the PDF would load from outside the built site, before WeasyPrint runs.

    pages are (source, HTML, source lines): what WeasyPrint gets of one page, named by the file it is made from,
    whose lines give each problem its line. Each stylesheet and SVG image of the site that a page loads is read
    too, and what it loads is named with it."""
    base = site.resolve().as_uri() + "/"
    problems: list[Problem] = []
    for source, text, lines in pages:
        found = html_addresses(text)
        taken: dict[str, set[int]] = {}
        line_of = {id(address): _line_of(address.value, lines, taken) for address in found if address.value}
        for address, url, via in _loaded(found, base, site, set(), None):
            try:
                site_path(url, site)
            except Refused as refused:
                line = line_of.get(id(address)) if via is None else None
                how = "" if via is None else f" (from {via})"
                problems.append(Problem(source, line, None, f"names {quoted(address.value)}{how}, {refused}: the "
                                        "print edition reads only the files of the built site"))
    return problems


def _loaded(found: list[Address], base: str, site: Path, seen: set[Path],
            via: str | None) -> list[tuple[Address, str, str | None]]:
    """(address, absolute URL, the site file that names it or None for the page) of everything found that is
    loaded, and of what the site's stylesheets and SVG images among them load in turn (each file read once)."""
    loaded: list[tuple[Address, str, str | None]] = []
    for address in found:
        value = _clean(address.value)
        if not address.embeds or not value or value.startswith("#"):
            continue
        try:
            url = urljoin(base, value)
        except ValueError:  # not an address: site_path refuses it as written
            url = value
        loaded.append((address, url, via))
        try:
            path = site_path(url, site)
        except Refused:
            continue
        kind = path.suffix.lower()
        if path in seen or kind not in (".css", ".svg"):
            continue
        seen.add(path)
        inner = path.read_text(encoding="utf-8", errors="replace")
        nested = css_addresses(inner) if kind == ".css" else html_addresses(inner)
        named = f"{site.name}/" + path.relative_to(site.resolve()).as_posix()
        loaded += _loaded(nested, path.as_uri(), site, seen, named)
    return loaded
