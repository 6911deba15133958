"""Switching LoRA adapters on one loaded base model: each attached by a name made from its checkpoint's label.

`AdapterSwitch` wraps the base model in a PeftModel with the first adapter (`PeftModel.from_pretrained`)
and loads every later one into that same model by name (`load_adapter` + `set_adapter`), so switching
checkpoints never loads a second base model. An adapter already attached is reused unless its weights
changed since (a resumed run rewrites its folders: the caller's `version` says so). `keep=False` drops
the previous adapter once the next is active, for a caller that visits each checkpoint once. The
evaluation uses it to run every checkpoint against one base pass; the chat to hold a run's adapters
and switch the active one off for the base side. Plain PEFT: it knows nothing about runs, generation
or what a side is.
"""

from __future__ import annotations

from pathlib import Path


def adapter_name(label: str) -> str:
    """The PEFT adapter name for a checkpoint label such as `checkpoint-2` or `<run>/final`.

    PEFT keeps adapters in torch module dicts, whose keys may not contain dots; the rest is kept so
    that the chat's badge shows the run and checkpoint the person picked.
    """
    return label.replace(".", "_")


class AdapterSwitch:
    """The LoRA adapters attached to one base model, one of them active; `model` is the PeftModel (None before the first)."""

    def __init__(self, peft, base_model, keep: bool = True):
        self.peft, self.base_model, self.keep = peft, base_model, keep
        self.model = None
        self.loaded: dict[str, str] = {}  # adapter name -> the version of the weights attached under it
        self.active: str | None = None

    def holds(self, label: str, version: str) -> bool:
        """Whether `label`'s adapter is attached with these weights (using it loads nothing)."""
        return self.loaded.get(adapter_name(label)) == version

    def use(self, folder: str | Path, label: str, version: str | None = None):
        """Attach the adapter in `folder` as `label` (again only when `version` changed) and make it the active one.

        Returns the PeftModel, in eval mode. A load that fails leaves the previous adapter attached and active.
        """
        name, version = adapter_name(label), version or str(folder)
        if self.model is None:
            self.model = self.peft.PeftModel.from_pretrained(self.base_model, str(folder), adapter_name=name)
        elif self.loaded.get(name) != version:
            if name in self.loaded:  # rewritten weights: a fresh adapter, not new tensors poured into the old one's layers
                self.model.delete_adapter(name)
            self.model.load_adapter(str(folder), adapter_name=name)
        self.loaded[name] = version
        self.model.set_adapter(name)
        if not self.keep:  # after set_adapter: deleting the active adapter would make PEFT activate another one
            for other in [n for n in self.loaded if n != name]:
                self.model.delete_adapter(other)
                del self.loaded[other]
        self.active = name
        return self.model.eval()
