"""`make miles-code MILES=checkout [SGLANG=sglang.whl] [ROUTER=sglang_router.whl]`: upstream/ copied again.

The Miles files are the entry modules of sources.py and every Miles module they import when they run (recorded
by running them, run.py's `record`), copied verbatim from the checkout, with its LICENSE; SGLang's and the
router's flag files come from the wheels given, or stay as they are. MANIFEST.json records the commit, the
versions and every file's SHA-256; README.md says what the folder is. The new folder replaces the old whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from build_tools.miles_code import MANIFEST, RUN, UPSTREAM, manifest, sources

# A one-GPU launch that runs parse_args and the actor's start-up to their end, so that every module they import
# on the way is recorded.
SAMPLE_LAUNCH = ["--train-backend", "fsdp", "--hf-checkpoint", "/models/Qwen3-0.6B", "--prompt-data",
                 "/data/train.parquet", "--input-key", "messages", "--rm-type", "math", "--num-rollout", "2",
                 "--rollout-batch-size", "4", "--n-samples-per-prompt", "2", "--num-steps-per-rollout", "1",
                 "--colocate", "--actor-num-nodes", "1", "--actor-num-gpus-per-node", "1", "--num-gpus-per-node",
                 "1", "--sglang-mem-fraction-static", "0.4", "--use-miles-dashboard", "--dump-details", "/dump"]


def _commit(checkout: Path) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=False)
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip()
    return (checkout / "COMMIT").read_text(encoding="utf-8").strip()


def _from_wheel(wheel: Path, names: tuple[str, ...], into: Path) -> str:
    """The files `names` of a wheel, and its licence, into `into`; its version."""
    with zipfile.ZipFile(wheel) as archive:
        for name in names:
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            (into / name).write_bytes(archive.read(name))
        # The wheel's own metadata folder (NAME-VERSION, then dist-info): its METADATA and licenses/.
        meta = [name.split("/") for name in archive.namelist() if name.split("/")[0].endswith("-info")]
        info = next("/".join(parts) for parts in meta if parts[1:] == ["METADATA"])
        licences = ["/".join(parts) for parts in meta if len(parts) == 3 and parts[1] == "licenses" and parts[2]]
        top = names[0].split("/")[0]
        for name in licences:
            (into / f"LICENSE.{top}").write_bytes(archive.read(name))
        metadata = archive.read(info).decode("utf-8")
    return next(line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Version:"))


def _keep(names: tuple[str, ...], into: Path) -> None:
    """SGLang's or the router's files as upstream/ has them now (no wheel given)."""
    for name in names:
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(UPSTREAM / name, into / name)
    top = names[0].split("/")[0]
    if (UPSTREAM / f"LICENSE.{top}").is_file():
        shutil.copyfile(UPSTREAM / f"LICENSE.{top}", into / f"LICENSE.{top}")


def _recorded_miles_files(checkout: Path, flag_files: Path) -> list[str]:
    """Run the entries against the checkout (SGLang's flag files beside it) and list the Miles files imported."""
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder)
        (tree / "miles").symlink_to((checkout / "miles").resolve(), target_is_directory=True)
        for top in ("sglang", "sglang_router"):
            shutil.copytree(flag_files / top, tree / top)
        request = {"task": "record", "source": str(tree), "inert": list(sources.MILES_NOT_FOLLOWED),
                   "commands": [SAMPLE_LAUNCH]}
        done = subprocess.run([sys.executable, "-I", "-B", str(RUN)], input=json.dumps(request),
                              capture_output=True, text=True, check=False, env=_environment())
        if done.returncode != 0:
            raise SystemExit(f"running Miles' code from {checkout} failed:\n{done.stderr[-4000:]}")
        found: list[str] = json.loads(done.stdout)
    entries = [name.replace(".", "/") + ".py" for name in sources.MILES_ENTRIES]
    return sorted(set(found) | {entry for entry in entries if (checkout / entry).is_file()})


def _environment() -> dict[str, str]:
    """The subprocess's environment: none of the caller's MILES_* variables, which Miles' parse_args reads."""
    return {name: value for name, value in os.environ.items() if not name.startswith("MILES")}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refresh(checkout: Path, sglang_wheel: Path | None, router_wheel: Path | None) -> dict[str, Any]:
    old = manifest() if MANIFEST.is_file() else {}
    staged = Path(tempfile.mkdtemp(prefix=".upstream-", dir=UPSTREAM.parent))
    try:
        versions = {}
        for key, names, wheel in (("sglang", sources.SGLANG_FILES, sglang_wheel),
                                  ("sglang_router", sources.ROUTER_FILES, router_wheel)):
            if wheel is not None:
                versions[key] = _from_wheel(wheel, names, staged)
            else:
                _keep(names, staged)
                versions[key] = old[key]["version"]
        miles_files = _recorded_miles_files(checkout, staged)
        for name in miles_files:
            (staged / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(checkout / name, staged / name)
        shutil.copyfile(checkout / "LICENSE", staged / "LICENSE")
        data = {
            "about": "Files of Miles (radixark/miles), SGLang and sglang-router, copied verbatim; regenerate with "
                     "make miles-code MILES=/path/to/miles-checkout [SGLANG=sglang.whl] [ROUTER=router.whl]",
            "miles": {"commit": _commit(checkout), "files": {name: _sha256(staged / name) for name in miles_files}},
            "sglang": {"version": versions["sglang"],
                       "files": {name: _sha256(staged / name) for name in sources.SGLANG_FILES}},
            "sglang_router": {"version": versions["sglang_router"],
                              "files": {name: _sha256(staged / name) for name in sources.ROUTER_FILES}},
        }
        (staged / MANIFEST.name).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        (staged / "README.md").write_text(_readme(data), encoding="utf-8")
        backup = UPSTREAM.with_name(".upstream-old")
        if UPSTREAM.exists():
            UPSTREAM.rename(backup)
        staged.rename(UPSTREAM)
        shutil.rmtree(backup, ignore_errors=True)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return data


def _readme(data: dict[str, Any]) -> str:
    return f"""# Miles' own code, as the manual runs it

These files are copied unmodified from their projects, keeping their package paths; none is edited here.

- `miles/`: radixark/miles at commit `{data['miles']['commit']}` ({len(data['miles']['files'])} files),
  Apache License 2.0 (`LICENSE`, Miles' own).
- `sglang/`: the files of SGLang {data['sglang']['version']} (its wheel on PyPI) that define its server flags,
  which Miles registers as `--sglang-*`; Apache License 2.0 (`LICENSE.sglang`).
- `sglang_router/`: the files of sglang-router {data['sglang_router']['version']} (its wheel on PyPI) that define
  the router's flags, which Miles registers as `--router-*`; Apache License 2.0 (sglang-router's metadata).

`MANIFEST.json` lists every file with its SHA-256. Which modules the manual runs, and why, is
`build_tools/miles_code/sources.py`; the Miles modules they import came along (`make miles-code` records them
by running the entries). They run only in a process of their own (`build_tools/miles_code/run.py`), every other
module (torch, Ray, NVML, transformers, ...) an inert stand-in. To copy them again:

    make miles-code MILES=/path/to/miles-checkout [SGLANG=sglang-X.whl] [ROUTER=sglang_router-X.whl]
"""


def main() -> int:
    checkout = Path(os.environ.get("MILES", ""))
    if not os.environ.get("MILES") or not (checkout / "miles" / "utils" / "arguments.py").is_file():
        print("ERROR make miles-code needs MILES=/path/to/a/miles/checkout (a folder holding miles/)",
              file=sys.stderr)
        return 2
    wheels = [Path(os.environ[name]) if os.environ.get(name) else None for name in ("SGLANG", "ROUTER")]
    data = refresh(checkout, wheels[0], wheels[1])
    print(f"{UPSTREAM}: {len(data['miles']['files'])} Miles files from {data['miles']['commit']}, "
          f"SGLang {data['sglang']['version']}, sglang-router {data['sglang_router']['version']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
