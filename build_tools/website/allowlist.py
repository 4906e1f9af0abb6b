"""What a page of the manual may hold: the elements, attributes and CSS it needs, and nothing else.

The sealed boundary (boundary.py) allows rather than blocks: a construct that is not listed here is refused,
however it is spelled, so the next trick (an SVG <set> that swaps an image for a remote one, a form's
javascript: action, an <object> that loads an SVG which loads the web) is refused without anyone having
thought of it. The lists hold what the chapters need today, found in them and in what their Markdown
extensions, the build's figure blocks and matplotlib write (tests/website/test_boundary.py checks every chapter and
every figure the build draws against them): text, lists, tables, code, figures and links, and SVG drawings
without animation, scripts or foreign content. A chapter that needs more adds it here, with its reason.

Why not a sanitizer (nh3/ammonia, bleach): a sanitizer cleans a page, silently; the build must refuse a chapter
with the line that is wrong. The page is parsed as a browser parses it (tinyhtml5, WeasyPrint's own parser),
an SVG file as the XML it is (expat, with its line numbers), CSS with tinycss2 (WeasyPrint's CSS parser), and
each element, attribute, address and CSS token is held against these lists.
"""

from __future__ import annotations

from typing import Any

HTML_NS = "http://www.w3.org/1999/xhtml"
SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
XML_NS = "http://www.w3.org/XML/1998/namespace"
# What matplotlib writes in an SVG's <metadata> (RDF, Creative Commons, Dublin Core): inert description.
METADATA_NS = ("http://www.w3.org/1999/02/22-rdf-syntax-ns#", "http://creativecommons.org/ns#",
               "http://purl.org/dc/elements/1.1/")

# --- HTML --------------------------------------------------------------------------------------------------------

# Attributes any element of a page may carry. `style` is read by css_refusal; data-search-exclude keeps a figure's
# check and the Metrics tables out of the search index (build_tools/website/search_rows.py).
HTML_GLOBAL = frozenset({"id", "class", "title", "lang", "dir", "style", "hidden", "aria-label", "aria-hidden",
                         "data-search-exclude"})

# Each element a page may hold -> the attributes it may carry besides HTML_GLOBAL. Python-Markdown and its
# extensions write the text, lists, tables, code (pymdownx.highlight: <div>, <pre>, <span>), admonitions (<div>),
# permalinks (<a class="headerlink">) and <wbr> (markdown_wbr); the figure blocks write <figure>, <picture>,
# <source>, <img>, <figcaption>, <details>, <summary>; the Metrics page <q>. Inline <svg> is read with SVG_*.
_TEXT = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "b", "i", "s", "del", "ins", "mark", "small",
         "sub", "sup", "code", "kbd", "samp", "var", "pre", "blockquote", "q", "abbr", "dfn", "span", "div", "br",
         "hr", "wbr", "ul", "dl", "dt", "dd", "caption", "thead", "tbody", "tfoot", "tr", "colgroup", "table",
         "figure", "figcaption", "picture", "summary")
HTML_ELEMENTS: dict[str, frozenset[str]] = {
    **{name: frozenset() for name in _TEXT},
    "a": frozenset({"href", "rel"}),  # rel="attachment": the print edition embeds the (local) target
    "img": frozenset({"src", "srcset", "sizes", "alt", "width", "height", "loading", "data-manual-full"}),
    "source": frozenset({"srcset", "sizes", "media", "type", "width", "height"}),
    "ol": frozenset({"start", "reversed", "type"}),
    "li": frozenset({"value"}),
    "th": frozenset({"colspan", "rowspan", "align", "scope"}),
    "td": frozenset({"colspan", "rowspan", "align"}),
    "col": frozenset({"span"}),
    "details": frozenset({"open"}),
    "time": frozenset({"datetime"}),
}
# The elements an HTML parser adds around any fragment: a chapter is a fragment of its page.
HTML_FRAME = frozenset({"html", "head", "body"})

# Attributes whose value is an address, each checked against the boundary's rule (boundary.page_refusal):
# a link a reader clicks (href of <a>, unless rel="attachment") may go to a web page; everything else loads,
# and only the manual's files.
ADDRESS_LISTS = frozenset({"srcset"})  # "a.svg 1x, b.svg 2x"
ADDRESSES = frozenset({"href", "src", "data-manual-full", "xlink:href"})

# --- SVG ---------------------------------------------------------------------------------------------------------

# A drawing: shapes, text, groups and their reuse, clipping, gradients and patterns, and links. No animation
# (<set>, <animate>, <animateMotion>, <animateTransform>, <discard> change an attribute, an href too, after every
# check), no <foreignObject> (HTML inside), no <script>, no filters (<feImage> loads a file).
SVG_ELEMENTS = frozenset({
    "svg", "g", "defs", "title", "desc", "metadata", "style", "symbol", "use", "switch",
    "path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "text", "tspan", "textPath",
    "clipPath", "mask", "pattern", "marker", "linearGradient", "radialGradient", "stop", "image", "a",
})
# An inline <svg> is part of its page: a <style> in it would style the whole page, so it has none.
SVG_INLINE_ELEMENTS = SVG_ELEMENTS - {"style"}

SVG_ATTRIBUTES = frozenset(name.lower() for name in (
    # structure, geometry and reuse
    "id", "class", "style", "version", "baseProfile", "viewBox", "preserveAspectRatio", "transform",
    "x", "y", "width", "height", "d", "points", "cx", "cy", "r", "rx", "ry", "x1", "y1", "x2", "y2", "fx", "fy",
    "dx", "dy", "rotate", "textLength", "lengthAdjust", "startOffset", "pathLength", "offset", "type",
    "clipPathUnits", "maskUnits", "maskContentUnits", "patternUnits", "patternContentUnits", "patternTransform",
    "gradientUnits", "gradientTransform", "spreadMethod", "markerWidth", "markerHeight", "markerUnits", "refX",
    "refY", "orient", "href", "xlink:href", "xlink:title", "xml:space", "xml:lang", "lang",
    "role", "aria-label", "aria-hidden", "focusable", "requiredExtensions", "systemLanguage",
    # presentation (each value read by css_refusal: a url() in it names only a #fragment of the drawing)
    "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width", "stroke-opacity", "stroke-linecap",
    "stroke-linejoin", "stroke-dasharray", "stroke-dashoffset", "stroke-miterlimit", "opacity", "clip-path",
    "clip-rule", "mask", "marker-start", "marker-mid", "marker-end", "stop-color", "stop-opacity", "color",
    "font-family", "font-size", "font-weight", "font-style", "font-variant", "font-stretch", "text-anchor",
    "dominant-baseline", "alignment-baseline", "baseline-shift", "letter-spacing", "word-spacing",
    "text-decoration", "writing-mode", "display", "visibility", "overflow", "vector-effect", "paint-order",
    "shape-rendering", "text-rendering", "image-rendering", "color-interpolation",
))
# Attributes of the metadata matplotlib writes (rdf:resource names a vocabulary; nothing loads it).
METADATA_ATTRIBUTES = frozenset({"rdf:resource", "rdf:about"})
# Attributes that hold no CSS (a path's data, an address, a name, text): not read as CSS values.
SVG_NOT_CSS = frozenset({"d", "points", "href", "xlink:href", "xlink:title", "id", "class", "style", "aria-label",
                         "lang", "xml:lang", "xml:space", "version", "baseprofile", "role", "systemlanguage",
                         "requiredextensions", "type"})

# --- CSS ---------------------------------------------------------------------------------------------------------

# The functions a page's CSS may call: custom properties, arithmetic, colours, transforms and the selectors a
# drawing's <style> uses. No image-set(), image(), cross-fade(), element(), env() ... and url() only to a
# #fragment of the same drawing (a clip path, a gradient).
CSS_FUNCTIONS = frozenset({
    "var", "calc", "min", "max", "clamp", "rgb", "rgba", "hsl", "hsla",
    "matrix", "translate", "translatex", "translatey", "scale", "scalex", "scaley", "rotate", "skewx", "skewy",
    "not", "is", "where", "nth-child", "nth-of-type", "url",
})


def css_refusal(text: str, kind: str) -> tuple[str, str, int] | None:
    """(what, why, its line in the text) of the first thing in a CSS text that the manual's CSS does not need;
    None when it holds only listed things. kind: "stylesheet" (a drawing's <style>), "declarations" (a style
    attribute) or "value" (an SVG presentation attribute). Escapes are decoded as a browser decodes them
    (tinycss2): `\\75 rl(` is url(."""
    import tinycss2  # type: ignore[import-untyped]  # WeasyPrint's CSS parser; no type hints

    parse = {"stylesheet": tinycss2.parse_stylesheet, "declarations": tinycss2.parse_blocks_contents,
             "value": tinycss2.parse_component_value_list}[kind]
    return _first_refused(parse(text))


def _first_refused(nodes: Any) -> tuple[str, str, int] | None:
    for node in nodes or ():
        kind, line = getattr(node, "type", ""), getattr(node, "source_line", 1)
        if kind == "at-rule":
            return f"@{node.at_keyword}", "the manual's CSS has no @-rule (an @import or @font-face loads a file)", line
        if kind == "error":
            return node.message, "not CSS a browser reads as written", line
        if kind == "url" and not node.value.startswith("#"):
            return f"url({node.value})", URL_TAIL, line
        if kind == "function":
            name = node.lower_name
            if name not in CSS_FUNCTIONS:
                return f"{node.name}()", ("not a CSS function the manual needs (var(), calc(), rgb(), transforms; "
                                          "build_tools/website/allowlist.py lists them)"), line
            if name == "url":
                target = next((part.value for part in node.arguments if part.type == "string"), "")
                if not target.startswith("#"):
                    return f"url({target})", URL_TAIL, line
        found = None
        for part in ("prelude", "content", "value", "arguments"):
            children = getattr(node, part, None)
            if isinstance(children, list):
                found = found or _first_refused(children)
        if found:
            return found
    return None


URL_TAIL = "an address in CSS: the manual's CSS names no file, only a #fragment of its own page or drawing"
