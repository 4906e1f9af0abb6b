"""`make bench`: the build's time, at scale, and Ray's."""
