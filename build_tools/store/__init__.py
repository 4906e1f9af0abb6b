"""The build's state: what earlier builds made, and what each was made from, so that an unchanged output is not
made again. One package, one key scheme (`fingerprint.Key`: sha256 of a kind, the tools' versions, then named parts),
one record per output.

What it holds, each kept under its key:
- each run's input hash, the memo (`run_hash`; build/cache/summaries/input-hashes.json): keyed on its files'
  names, sizes, mtime and ctime in ns, inodes and devices, as git's index;
- each run's summary, and the runs only validated (`summary_cache`; build/cache/summaries/): keyed on the run's
  input hash (its bytes, the code that reads it, the tools);
- a summary sent back by a Ray worker (`summary_wire`): the worker's code and tools, refused when they differ;
- each figure (build/cache/figures/, `draw.py`): keyed on its inputs (what it read of its runs, part by part:
  drawing/reads.py; its module, the palette and style) and its drawing;
- the site (build/site.key, `site.py`): the pages, mkdocs.yml, the theme overrides, the settings;
- a no-op build and the last check's report (build/inputs.key, check.key and check.out; `uptodate`): every input
  file and each run's input hash, the settings.

What is trusted, and when:
- **File metadata**, only as git's index trusts it: a run whose files keep their names, sizes, mtime and ctime in
  nanoseconds, inodes and devices is not hashed again; a file written (or whose times were set) less than two
  seconds before it was hashed is not remembered ("racily clean"). A file rewritten with its size kept and its
  mtime put back (`touch -r`, `cp -p`, `tar x`, `rsync -t`) has a new ctime, which no user can set back.
- **Everything else by content**: a summary, a figure and the site are keyed on the digests of what they are made
  from; a damaged entry is discarded, said in a warning, and made again. Nothing in the cache is executed: JSON and
  Parquet are read as data.
- **Never by an edition.** `make publish` and the rebuild of `make verify` build with settings that trust no
  earlier state (`Settings.trust_state`): no memo, no cached summary or figure, no site key, no replayed report;
  every input byte is hashed and read, so an edition's manifest records only what its commit's data gives.

Each key file (`build/*.key`, and each figure's `build/cache/figures/<id>.key` beside the hashes of its files) is a
JSON record: the output's kind and key, the tools' versions, and each file or run it was made from with its digest,
for a person asking why an output was, or was not, made again.
"""
