"""What every stage shares: the errors a user can cause, safe file reading, settings, the project's layout, the values
passed between stages, YAML, numbers, escaping, locks, staging, workers."""
