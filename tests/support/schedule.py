"""The order in which the default run hands its test files to the worker processes.

xdist's `loadfile` hands out files largest first by their number of tests, so a file of one
long test (the repository's secret scan) is handed out last and runs alone while the other
workers sit idle. The files that take longest are handed out first instead, the others after
them as xdist orders them: the long ones overlap and the short ones fill in at the end.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

# The slowest files of the default run (`--durations`, summed per file), longest first. A file
# missing here merely starts later; keep the list to the few that take tens of seconds.
LONGEST = (
    "tests/unit/test_no_secrets.py",
    "tests/e2e/test_video_sandbox.py",
    "tests/e2e/test_music_api.py",
    "tests/e2e/test_music_upstream.py",
    "tests/unit/test_sandbox_media.py",
    "tests/e2e/test_routing.py",
    "tests/e2e/test_webhooks.py",
    "tests/e2e/test_matrix.py",
    "tests/e2e/test_picwish_api.py",
    "tests/e2e/test_vidu_api.py",
    "tests/unit/test_sandbox_video_media.py",
    "tests/unit/test_sandbox_music_media.py",
    "tests/e2e/test_responses_background.py",
    "tests/e2e/test_media_sandbox.py",
    "tests/unit/test_h1.py",
    "tests/unit/test_sandbox_visual_media.py",
    "tests/unit/test_bench_overhead.py",
)


class LongestFilesFirst(LoadFileScheduling):
    _ordered = False

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not self._ordered:
            rank = {path: i for i, path in enumerate(LONGEST)}
            for scope in sorted(self.workqueue, key=lambda scope: rank.get(scope, len(LONGEST))):
                self.workqueue.move_to_end(scope)
            self._ordered = True
        super()._assign_work_unit(node)
