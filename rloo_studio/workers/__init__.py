"""The app's side of every child process that runs a model or a person's code: training jobs (jobs), the inference
worker (inference), the scoring child (scorer), a tab's command (commands), the time trial (trial)."""
