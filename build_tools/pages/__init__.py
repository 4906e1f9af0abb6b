"""The pages the render stage writes (build_tools/pages/render.py), one module per kind of page.

- `chapters`: a chapter of docs/ with its figure blocks replaced by figures; `troubleshooting`: the table a
  chapter holds where `<!-- troubleshooting-table -->` stands;
- `metrics`: the Metrics page (chapter 6) from templates/metrics.md.j2 and docs/data/metrics.yml;
- `figure_index`: the Index of figures from the blocks;
- `front_matter`: docs/index.md with its markers filled (contents, palette legend, provenance, runs);
- `claim_health`: every claim's margin, and the place publishing fills with the editions' history;
- `nav`: each page's title and place in the nav, and the site settings (`.manual.yml`) that carry them;
- the edition's record pages are `build_tools/pages/edition_pages.py`'s.
"""
