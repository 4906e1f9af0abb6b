"""The build of the manual: run data in, a checked, rendered site out. See MAINTAINING.md for the stages."""
