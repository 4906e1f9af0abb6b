"""Stage 7: the site built with mkdocs, the print edition, the search rows, the sealed boundary, and `make serve`."""
