"""Facts about Miles read from its own source, kept as data with the commit they come from (`make miles-facts`)."""
