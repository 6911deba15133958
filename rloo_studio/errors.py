"""Errors a person can act on: each says what went wrong, why, and what to do.

Every layer raises `StudioError` (or a subclass) for problems caused by input — a config, a
dataset, reward code, the hardware — so that the command line and the app can show one clear
message instead of a traceback. Programming errors stay ordinary exceptions.
"""

from __future__ import annotations


class StudioError(Exception):
    """A problem with the user's input or environment, explained in three parts."""

    def __init__(self, what: str, why: str = "", fix: str = ""):
        self.what = what
        self.why = why
        self.fix = fix
        super().__init__(self.message())

    def message(self) -> str:
        # A `what` that ends with a quoted line of code (indented) ends there: a full stop would read as part of the code.
        quoted = self.what.rstrip("\n").rsplit("\n", 1)[-1].startswith("    ") if "\n" in self.what else False
        parts = [self.what.rstrip("\n") if quoted else self.what.rstrip(".") + "."]
        if self.why:
            parts.append(f"Why: {self.why.rstrip('.')}.")
        if self.fix:
            parts.append(f"What to do: {self.fix.rstrip('.')}.")
        return "\n".join(parts)

    def as_dict(self) -> dict:
        """The form stored in status.json's `error` field, and sent over a pipe."""
        return {"what": self.what, "why": self.why, "fix": self.fix, "type": type(self).__name__}

    @classmethod
    def from_dict(cls, error: dict | None, fallback: str = "it failed") -> "StudioError":
        """An error read back from `as_dict`'s form (another process's), as this class; `fallback` is the what when
        the dict has none (a process that ended without saying)."""
        error = error or {}
        return cls(error.get("what") or fallback, error.get("why") or "", error.get("fix") or "")


class ConfigError(StudioError):
    """One or more problems in a RunConfig, all reported together."""

    def __init__(self, problems: list[str], source: str = "the config"):
        self.problems = list(problems)
        listing = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            what=f"{source} has {len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}:\n{listing}",
            fix="correct the values listed above (see docs/config.md) and run again",
        )


class DataError(StudioError):
    """A dataset that cannot be read or does not have the mapped columns."""


class RewardError(StudioError):
    """Reward code that cannot be loaded, or a reward function that misbehaved while scoring."""


class ModelError(StudioError):
    """A model or tokenizer that cannot be found or loaded."""


class OutOfMemory(StudioError):
    """The accelerator ran out of memory."""

