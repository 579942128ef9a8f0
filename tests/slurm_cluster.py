"""A one-node SLURM cluster on 127.0.0.1 for the tests: Debian's packages, daemons started by hand.

apt starts no service, so munged, slurmctld and slurmd run in the foreground as children of this
process and are stopped by their process ids. The node claims one GPU (`Gres=gpu:1`, `File=/dev/null`)
so that rules asking for `gpu=1` are scheduled on a machine without one. The configuration must sit
at /etc/slurm/slurm.conf: the job-step plugin drops SLURM_CONF.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
SLURM_CONF = Path("/etc/slurm/slurm.conf")
GRES_CONF = SLURM_CONF.parent / "gres.conf"

CONFIG = """# written by examflow's tests/slurm_cluster.py
ClusterName=examflow-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={state}/ctld
SlurmdSpoolDir={state}/d
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd.pid
SlurmctldLogFile={state}/slurmctld.log
SlurmdLogFile={state}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
MinJobAge=300
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
MARK = CONFIG.splitlines()[0]  # a configuration file this module wrote
GRES = "Name=gpu File=/dev/null\n"


def available() -> str | None:
    """Why a cluster cannot be started here, or None."""
    if os.geteuid() != 0:
        return "starting SLURM's daemons needs root"
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "the SLURM executor plugin is not installed (pip install -e '.[slurm]'; make test-slurm does)"
    if not all(shutil.which(tool) for tool in ("slurmctld", "slurmd", "munged", "sbatch")):
        result = subprocess.run(
            "apt-get update -qq && apt-get install -y -qq --no-install-recommends " + " ".join(PACKAGES),
            shell=True, capture_output=True, text=True,
        )  # fmt: skip
        if result.returncode != 0:
            return f"could not install {', '.join(PACKAGES)}: {result.stderr.strip()[-200:]}"
    return None


class Cluster:
    def __init__(self, state: Path):
        self.state = state
        self.daemons: list[subprocess.Popen] = []
        # the configuration files and variables as they were, given back on stop
        self.found: dict[Path, str | None] = {}
        self.exported: dict[str, str | None] = {}

    def start(self) -> None:
        """The daemons up and the node idle; on any failure, stopped again with the configuration given back."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        host = socket.gethostname()
        cpus, memory = _node_resources()
        (self.state / "ctld").mkdir(parents=True, exist_ok=True)
        (self.state / "d").mkdir(parents=True, exist_ok=True)
        self._configure(SLURM_CONF, CONFIG.format(host=host, state=self.state, cpus=cpus, memory=memory))
        self._configure(GRES_CONF, f"{MARK}\n{GRES}")
        # every child (daemons, probes, the test's snakemake) reads this one, whatever the shell exported
        self.exported.setdefault("SLURM_CONF", os.environ.get("SLURM_CONF"))
        os.environ["SLURM_CONF"] = str(SLURM_CONF)
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        shutil.chown(key, "munge", "munge")
        key.chmod(0o400)
        Path("/run/munge").mkdir(exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        self._daemon(["runuser", "-u", "munge", "--", "munged", "--foreground"], "munged")
        self._wait(lambda: subprocess.run(["munge", "-n"], capture_output=True).returncode == 0, "munge")
        self._daemon(["slurmctld", "-D", "-i"], "slurmctld")
        self._wait(
            lambda: subprocess.run(["scontrol", "ping"], capture_output=True, text=True).stdout.count("UP"), "slurmctld"
        )
        self._daemon(["slurmd", "-D"], "slurmd")
        self._wait(
            lambda: (
                subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True).stdout.strip() == "idle"
            ),
            "the node",
        )

    def stop(self) -> None:
        for daemon in reversed(self.daemons):
            daemon.terminate()
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        self.daemons.clear()
        self._unconfigure()

    def _configure(self, path: Path, text: str) -> None:
        """Write one configuration file, keeping what a machine's own cluster had there (ours, left by a
        run that was killed, is not worth keeping)."""
        before = path.read_text() if path.exists() else None
        ours = before is not None and (before.startswith(MARK) or before == GRES)  # (written unmarked before)
        self.found.setdefault(path, None if ours else before)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def _unconfigure(self) -> None:
        """Give the configuration back: left naming a controller that is down, it makes every later
        `scontrol` (which the SLURM executor plugin calls whenever snakemake starts) retry for 9 s."""
        for path, before in self.found.items():
            if before is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(before)
        for name, value in self.exported.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.found.clear()
        self.exported.clear()

    def _daemon(self, command: list[str], name: str) -> None:
        log = open(self.state / f"{name}.out", "w")
        self.daemons.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT))

    def _wait(self, ready, what: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ready():
                return
            if any(d.poll() is not None for d in self.daemons):
                break
            time.sleep(0.5)
        logs = "\n".join(
            p.read_text()[-1500:] for p in sorted(self.state.glob("*.out")) + sorted(self.state.glob("*.log"))
        )
        raise RuntimeError(f"{what} did not come up:\n{logs}")


def _node_resources() -> tuple[int, int]:
    """CPUs and memory (MB, a little under what slurmd sees) of this machine."""
    found = dict(
        item.split("=", 1)
        for item in subprocess.run(["slurmd", "-C"], capture_output=True, text=True).stdout.split()
        if "=" in item
    )
    return int(found["CPUs"]), int(found["RealMemory"]) * 9 // 10
