"""Stage 1, runs in: every form Miles writes (sources/), read and validated (load, schemas, the column fast path,
Miles' step axes)."""
