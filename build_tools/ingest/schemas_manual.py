"""The schemas of the manual's own files: edition.yml, docs/data/*.yml (the Metrics page, the symptoms of chapter
7, the setup), a chapter's figure blocks, figures/palette.yml.

Their field types and error messages are schemas.py's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError

from build_tools.ingest.schemas import (
    MOST_PARAMETERS,
    Commit,
    Edition,
    Grey,
    Hex,
    IsoDate,
    Positive,
    Schema,
    Text,
    Whole,
)
from build_tools.ingest.schemas_run import SetupHardware


class MilesStamp(Schema):
    image: Text
    branch: Text
    commit: Commit
    commit_date: IsoDate


class EditionYaml(Schema):
    """edition.yml: the edition this build makes, the stamp on every page."""

    edition: Edition
    date: IsoDate
    miles: MilesStamp
    warn_margin: Positive | None = None  # `manual check` warns of a claim whose margin's fraction is below it


class RunSet(Schema):
    """A named predicate on run.yaml: any of these tags, and every dotted field equal to its value."""

    tags: list[Text] = []
    where: dict[str, int | float | str | bool | None] = {}


STATS = ("range", "all_zero", "first_step", "median", "median_head", "every_step")


class MetricRow(Schema):
    """A row of the Metrics page; a table with a value column needs runs, stat and wording in each row."""

    metric: Text
    meaning: Text
    runs: Text | None = None
    stat: Literal[STATS] | None = None  # type: ignore[valid-type]
    wording: Text | None = None
    otherwise: Text | None = None
    decimals: Annotated[int, Field(ge=0, le=6)] = 2
    head: Whole | None = None
    head_decimals: Annotated[int, Field(ge=0, le=6)] | None = None
    code: bool | None = None


class MetricTable(Schema):
    title: Text
    column: Text | None = None
    rows: list[MetricRow]
    after: Text | None = None

    @model_validator(mode="after")
    def _rows_fill_the_column(self) -> MetricTable:
        for index, row in enumerate(self.rows):
            for name in ("runs", "stat", "wording"):
                if self.column and getattr(row, name) is None:
                    raise PydanticCustomError("row", "row {index} ({metric}) has no {name}, which a table with "
                                              "the column {column!r} needs",
                                              {"index": index, "metric": row.metric, "name": name,
                                               "column": self.column})
        return self


class MetricsYaml(Schema):
    """docs/data/metrics.yml: the Metrics page as data (rows, run sets, how each cell is computed)."""

    run_sets: dict[str, RunSet]
    intro_runs: Text
    tables: list[MetricTable]


class ShortSymptom(Schema):
    """A symptom's short forms, a few words each, for figure 7.1's quick-reference chart."""

    symptom: Text
    check: Text
    fix: Text


class Symptom(Schema):
    symptom: Text
    check: Text
    fix: Text
    short: ShortSymptom | None = None


class TroubleshootingYaml(Schema):
    """docs/data/troubleshooting.yml: the symptoms of chapter 7, one check and one fix each."""

    symptoms: Annotated[list[Symptom], Field(min_length=1)]


class SetupYaml(Schema):
    """docs/data/setup.yml: the manual's setup, which `make add-run` writes into a new run's run.yaml."""

    hardware: SetupHardware
    # a model's parameter count, by its name
    parameters: dict[Text, Annotated[int, Field(ge=1, le=MOST_PARAMETERS)]] = {}


# docs/data/<name>.yml -> its schema; a data file with no schema here is refused.
DATA_TABLES: dict[str, type[Schema]] = {"metrics": MetricsYaml, "troubleshooting": TroubleshootingYaml,
                                        "setup": SetupYaml}


class FigureBlockYaml(Schema):
    """A ```figure block of a chapter (docs/README.md documents each field)."""

    id: Annotated[str, Field(pattern=r"^fig-[a-z0-9-]+$")]
    module: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")]
    runs: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")]]
    claim: Text
    checks: Annotated[list[dict[str, Any]], Field(min_length=1)]
    alt: Text | None = None
    tables: list[Text] | None = None
    options: dict[str, Any] | None = None
    prose: list[Text] | None = None



class PaletteRole(Schema):
    name: Text
    colour_name: Text
    phrase: Text
    hex: Hex
    dark: Hex  # the role's shade in the dark scheme
    meaning: Text


class PaletteYaml(Schema):
    """figures/palette.yml: the role colours and the neutral greys (the one place a colour is defined); the
    dark scheme's shade of each, a neutral's at the same position of dark_neutrals."""

    roles: list[PaletteRole]
    neutrals: Annotated[list[Grey], Field(min_length=1)]
    dark_neutrals: Annotated[list[Grey], Field(min_length=1)]
