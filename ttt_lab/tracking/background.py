"""Logging one finished result to MLflow from a helper process started in advance.

Importing MLflow and opening its store costs seconds; a short command (an audit) starts
`python -m ttt_lab.tracking.background` first, does its work meanwhile on the other core,
then hands over a job (tags, params, metrics, artifact files) and gets the run id back.
This module imports nothing heavy: the helper does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass, field

from ttt_lab.errors import TttLabError


@dataclass
class Job:
    experiment: str
    name: str
    tags: dict[str, str]
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    artifact_dir: str | None = None


class BackgroundLogger:
    def __init__(self, uri: str, artifacts: str) -> None:
        self._proc = subprocess.Popen([sys.executable, "-m", "ttt_lab.tracking.background", uri, artifacts],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True)

    def log(self, job: Job) -> str:
        """The run id; raises the store's own one-paragraph error if it could not be used."""
        out, err = self._proc.communicate(json.dumps(asdict(job)), timeout=600)
        if self._proc.returncode != 0:
            lines = [x for x in err.strip().splitlines() if x.strip()]
            raise TttLabError(lines[-1] if lines else "the MLflow logging helper stopped without a message")
        return json.loads(out)["run_id"]

    def cancel(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def main() -> None:
    from pathlib import Path

    from ttt_lab.tracking.store import TrackedRun, open_store

    uri, artifacts = sys.argv[1], sys.argv[2]
    try:
        store = open_store(uri, artifacts)
        job = Job(**json.loads(sys.stdin.read() or "null"))
    except TttLabError as e:
        sys.stderr.write(str(e).replace("\n", " ") + "\n")  # the parent reads it as the error
        sys.exit(2)
    except TypeError:
        sys.exit(0)  # cancelled: no job was sent
    with TrackedRun(store, job.experiment, name=job.name, tags=job.tags) as run:
        run.log_params(job.params)
        run.log_metrics(job.metrics)
        run.flush()
        for path in job.artifacts:
            run.log_artifact(Path(path), job.artifact_dir)
    sys.stdout.write(json.dumps({"run_id": run.run_id}) + "\n")  # the reply the parent process reads


if __name__ == "__main__":
    main()
