"""The print edition: one PDF of the whole manual from the built site, the same bytes on every rebuild."""

from __future__ import annotations

import contextlib
import re
import shutil

import pytest

from build_tools.core._exceptions import ManualError
from build_tools.core._settings import library_environment, print_environment
from build_tools.website import pdf
from tests.page_text import METRICS_SEED, STAMP, seed_index_rows, seed_tables

pytest.importorskip("pypdf")


@pytest.fixture(scope="module")
def printed(built_manual, tmp_path_factory):
    """The PDF of the built manual, written twice into copies of its site with the same SOURCE_DATE_EPOCH."""
    paths = []
    for copy in ("a", "b"):
        site = tmp_path_factory.mktemp(f"print-{copy}") / "site"
        shutil.copytree(built_manual / "site", site)
        paths.append(pdf.write_pdf(built_manual / "build" / "docs", site, epoch=1792022400))  # 2026-10-15
    return paths


def _text(path) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() for page in PdfReader(str(path)).pages)


def _squeezed(text: str) -> str:
    """Text without any white space: a cell wrapped over lines of the PDF still reads as one string."""
    return re.sub(r"\s+", "", text)


def test_the_pdf_is_the_same_bytes_on_a_rebuild(printed):
    first, second = printed
    assert first.name == "2026.10.pdf"
    assert first.read_bytes() == second.read_bytes()


def test_the_pdf_in_two_shown_steps_is_weasyprint_s_own_in_one(printed, built_manual, tmp_path):
    """write_pdf lays the book out and writes it as two steps, each shown while it runs (`make pdf`'s progress):
    the bytes are those of WeasyPrint's HTML.write_pdf in one call, with the same options."""
    import hashlib

    from weasyprint import HTML

    site = tmp_path / "site"
    shutil.copytree(built_manual / "site", site)
    shown = []

    @contextlib.contextmanager
    def step(name):
        shown.append(name)
        yield

    stepped = pdf.write_pdf(built_manual / "build" / "docs", site, epoch=1792022400, step=step)
    assert stepped.read_bytes() == printed[0].read_bytes()
    assert shown[0] == "Laying out the print edition"
    assert re.fullmatch(r"Writing \S*2026\.10\.pdf \([0-9]+ pages\)", shown[1]) and len(shown) == 2
    _, document = pdf._book_document(built_manual / "build" / "docs", site, 1792022400)
    identifier = hashlib.sha256(document.encode("utf-8")).hexdigest()[:32].encode()
    with library_environment(print_environment(1792022400)):
        whole = HTML(string=document, base_url=str(site.resolve()) + "/",
                     url_fetcher=pdf.site_fetcher(site)).write_pdf(pdf_identifier=identifier, uncompressed_pdf=False)
    assert whole == stepped.read_bytes()


def test_make_pdf_shows_its_two_steps(built_manual, tmp_path, monkeypatch, capsys):
    """`make pdf` after the build: a line for each step of the print edition, as the build's stages show theirs."""
    from build_tools.cli import main

    root = tmp_path / "manual"
    shutil.copytree(built_manual, root)
    monkeypatch.chdir(root)
    assert main(["pdf"]) == 0
    err = capsys.readouterr().err.splitlines()
    steps = [line for line in err if line.startswith(("[1/2]", "[2/2]"))]
    assert len(steps) == 2
    assert re.fullmatch(r"\[1/2\] Laying out the print edition done in [0-9]+\.[0-9] s", steps[0]), steps
    assert re.fullmatch(r"\[2/2\] Writing site/2026\.10\.pdf \([0-9]+ pages\) done in [0-9]+\.[0-9] s",
                        steps[1]), steps


def test_the_pdf_holds_the_whole_manual(printed):
    from pypdf import PdfReader

    reader = PdfReader(str(printed[0]))
    assert reader.metadata["/CreationDate"] == "D:20261015000000Z"
    assert reader.metadata["/Title"] == "Miles on one DGX Spark, edition 2026.10"
    text = _text(printed[0])
    squeezed = _squeezed(text)
    first = reader.pages[0].extract_text()
    assert "Miles on one DGX Spark" in first and _squeezed(STAMP) in _squeezed(first)
    assert "Built from 20 synthesized example runs, not measurements." in first
    contents = reader.pages[1].extract_text()
    assert re.search(r"6\. Metrics \.+ \d+", contents) and re.search(r"Index of figures \.+ \d+", contents)
    # Every figure's caption, with its number.
    for number, claim in seed_index_rows():
        assert _squeezed(f"Figure {number}. {claim}") in squeezed, number
    # Both seed tables: every cell of the Metrics page's tables and of the Index of figures.
    for title, rows in seed_tables(METRICS_SEED).items():
        for row in rows:
            for cell in row:
                assert _squeezed(cell.strip("`")) in squeezed, (title, cell)
    for number, claim in seed_index_rows():  # a row of the Index table: the number, then the claim
        assert _squeezed(f"{number} {claim}") in squeezed, number
    # Page numbers and the stamp on every page after the title page.
    for index, page in enumerate(reader.pages[1:], start=2):
        words = page.extract_text()
        assert _squeezed(STAMP) in _squeezed(words) and re.search(rf"\b{index}\s*$", words), index


def test_the_figures_are_vectors(printed):
    from pypdf import PdfReader

    for page in PdfReader(str(printed[0])).pages:
        objects = (page.get("/Resources") or {}).get("/XObject") or {}
        assert all(item.get_object().get("/Subtype") != "/Image" for item in objects.values())


def test_no_built_site_is_one_line(tmp_path):
    with pytest.raises(ManualError, match="no built site"):
        pdf.write_pdf(tmp_path / "docs", tmp_path / "site")


def test_the_manifest_lists_the_pdf_by_its_hash(printed):
    import hashlib

    from build_tools.editions import _manifest

    site = printed[0].parent
    assert _manifest.print_section(site) == {"2026.10.pdf": hashlib.sha256(printed[0].read_bytes()).hexdigest()}


def test_the_index_and_every_cross_reference_give_the_page_of_their_figure(printed):
    """The Index of figures ends each row with the page of its figure, and every "Figure 5.1" of the text is
    followed by "(page N)" (CSS target-counter): the caption "Figure 5.1." is on that page."""
    from pypdf import PdfReader

    pages = [_squeezed(page.extract_text()) for page in PdfReader(str(printed[0])).pages]
    index = next(text for text in pages if text.startswith(_squeezed("Index of figures")) or
                 "Fig.Theclaimitmakes" in text)
    assert "Fig.TheclaimitmakesPage" in index
    for number, claim in seed_index_rows():
        # the page, then the next row's number (or the list's bullets after the table)
        found = re.search(re.escape(_squeezed(f"{number} {claim}")) + r"(\d+)(?=\d+\.\d|•|$)", index)
        assert found, number
        assert f"Figure{number}." in pages[int(found.group(1)) - 1], (number, found.group(1))
    references = [(number, int(page)) for text in pages
                  for number, page in re.findall(r"Figure(\d+\.\d+)\(page(\d+)\)", text)]
    assert len(references) >= len(seed_index_rows())  # the commands' "read by" lines name every figure of a run
    for number, page in references:
        assert f"Figure{number}." in pages[page - 1], (number, page)


def test_web_only_links_are_left_out_of_print(printed):
    text = _text(printed[0])
    assert "data behind this figure" not in text and "what it is built from" not in text


# --- where things land on the page ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def laid_out(built_manual):
    """The book's pages of boxes, as WeasyPrint lays them out for the PDF."""
    return pdf.lay_out(built_manual / "build" / "docs", built_manual / "site")


def _boxes(box, inside=None):
    """Every box under `box`, with the nearest enclosing element of class `inside` (None outside one)."""
    classes = (box.element.get("class") or "").split() if getattr(box, "element", None) is not None else []
    if inside is None and "manual-claim-health" in classes:
        inside = box.element
    yield box, inside
    for child in getattr(box, "children", []):
        yield from _boxes(child, inside)


def test_the_claim_health_table_fits_the_width_of_a4(laid_out):
    """Every cell of the Claim health table, on every page it runs over, ends inside the page's text column."""
    cells = 0
    for page in laid_out.pages:
        right = page._page_box.content_box_x() + page._page_box.width
        for box, inside in _boxes(page._page_box):
            if inside is not None and box.element_tag in ("td", "th"):
                cells += 1
                assert box.position_x + box.margin_width() <= right + 0.5, (box.element_tag, box.element.text)
    assert cells > 9  # the header and rows were found (nine columns)


def test_no_launch_command_is_split_over_two_pages(laid_out):
    pages_of: dict[int, set[int]] = {}
    for number, page in enumerate(laid_out.pages, start=1):
        for box, _ in _boxes(page._page_box):
            if box.element_tag == "pre":
                pages_of.setdefault(id(box.element), set()).add(number)
    assert len(pages_of) >= 8  # every chapter's commands
    assert [sorted(pages) for pages in pages_of.values() if len(pages) > 1] == []


def test_no_note_is_split_over_two_pages(laid_out):
    """A note (Miles' guidance under a Metrics table) keeps its title and its words on one page."""
    pages_of: dict[int, set[int]] = {}
    for number, page in enumerate(laid_out.pages, start=1):
        for box, _ in _boxes(page._page_box):
            element = getattr(box, "element", None)
            if element is not None and "admonition" in (element.get("class") or "").split():
                pages_of.setdefault(id(element), set()).add(number)
    assert len(pages_of) >= 2  # the Metrics page's notes
    assert [sorted(pages) for pages in pages_of.values() if len(pages) > 1] == []
