"""The app's drafts are written whole, even by several writers at once (autosave and *Check the code*)."""

from __future__ import annotations

import threading

from rloo_studio.ui.workspace import DRAFT_REWARDS, Workspace


def test_concurrent_draft_writes_never_fail_and_leave_one_whole_version(tmp_path):
    workspace = Workspace(tmp_path / "runs")
    errors: list[BaseException] = []
    versions = [f"# version {i}\n" + "x = 1\n" * 200 for i in range(6)]

    def writer(text: str) -> None:
        try:
            for _ in range(150):
                workspace.write(DRAFT_REWARDS, text)
        except BaseException as exc:  # noqa: BLE001 - any failure is what this test looks for
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(v,)) for v in versions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert workspace.read(DRAFT_REWARDS) in versions
    assert [p.name for p in workspace.dir.iterdir()] == [DRAFT_REWARDS]  # no temporary file left behind
