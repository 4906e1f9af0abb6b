"""`manual watch FOLDER`: a job that is still writing, held against the manual's contract (site/contract.json).

follow.py reads each file from where it left it (watchdog's file events, never a timer over every file);
records.py turns complete lines into metric values; judge.py keeps each range's and claim's status and says when
one changes; show.py writes the changes (jsonl, GitHub annotations, a live table).
"""
