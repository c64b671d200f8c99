"""bench/verdicts.py's parts, a module a job (the entry point, bench/verdicts.py, documents
what is measured and how; these modules assume bench/ on sys.path, as running it sets):

- workspace: the private temp directory and one bounded `webtune tune` in it (run_tune)
- targets: the target files written for webtune, and the real server of the null decisions
- decisions: the null decisions and the power tries, interleaved; null, power: their reports
- grid: a grid's measured windows and scores (GridResult), one window (measure_window)
- tuners: the tuner runs over a grid's knobs; rounds: a grid measured in rounds (run_grid)
- head_to_head: a barred pick measured against the grid's best again
- noise: the grid's own noise (its windows resampled), the --sure-rounds rule and its replay
- random_search: random search at a tuner's measuring time, from the grid's windows
- grids: the six grids, (a) to (f); report: a grid's tables, bars and summary
"""
