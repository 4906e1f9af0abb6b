"""The build of the manual: run data in, a checked, rendered site out. See README.md for the stages."""
