"""The app's side of every child process that runs a model or a person's command."""
